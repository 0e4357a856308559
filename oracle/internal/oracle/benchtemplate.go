package oracle

// The functions scheduler_perf's object templates may call: v1.34's `div` and `mod` (ints),
// and the set v1.37's getTemplateFuncs gives (AddInt ... SubtractFloat, Int, JSON, Mod: any
// number type or a numeric string), with upstream's semantics (a bad operand panics, which
// text/template reports as the template's error).  The names do not collide, so one map
// serves every release's templates.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/template"
)

func templateFuncs() template.FuncMap {
	return template.FuncMap{
		"div":           func(a, b int) int { return a / b },
		"mod":           func(a, b int) int { return a % b },
		"AddFloat":      addFloat,
		"AddInt":        func(n ...any) int { return int(addFloat(n...)) },
		"DivideFloat":   divideFloat,
		"DivideInt":     func(i, j any) int { return int(divideFloat(i, j)) },
		"Int":           toInt,
		"JSON":          toJSON,
		"Mod":           func(a, b any) int { return int(toFloat64(a)) % int(toFloat64(b)) },
		"MultiplyFloat": multiplyFloat,
		"MultiplyInt":   func(n ...any) int { return int(multiplyFloat(n...)) },
		"SubtractFloat": func(i, j any) float64 { return toFloat64(i) - toFloat64(j) },
		"SubtractInt":   func(i, j any) int { return int(toFloat64(i) - toFloat64(j)) },
	}
}

func toFloat64(val any) float64 {
	switch i := val.(type) {
	case float64:
		return i
	case float32:
		return float64(i)
	case int64:
		return float64(i)
	case int32:
		return float64(i)
	case int:
		return float64(i)
	case uint64:
		return float64(i)
	case uint32:
		return float64(i)
	case uint:
		return float64(i)
	case string:
		if f, err := strconv.ParseFloat(i, 64); err == nil {
			return f
		}
	}
	panic(fmt.Sprintf("cannot cast %v to float64", val))
}

func toInt(val any) int {
	if s, ok := val.(string); ok {
		if v, err := strconv.Atoi(s); err == nil {
			return v
		}
		panic(fmt.Sprintf("cannot cast %v to int", val))
	}
	return int(toFloat64(val))
}

func toJSON(val any) string {
	var buffer strings.Builder
	encoder := json.NewEncoder(&buffer)
	encoder.SetEscapeHTML(false)
	if err := encoder.Encode(val); err != nil {
		panic(fmt.Sprintf("cannot JSON-encode %v: %v", val, err))
	}
	return strings.TrimSpace(buffer.String())
}

func addFloat(numbers ...any) float64 {
	sum := 0.0
	for _, n := range numbers {
		sum += toFloat64(n)
	}
	return sum
}

func multiplyFloat(numbers ...any) float64 {
	product := 1.0
	for _, n := range numbers {
		product *= toFloat64(n)
	}
	return product
}

func divideFloat(i, j any) float64 {
	d := toFloat64(j)
	if d == 0 {
		panic("division by zero")
	}
	return toFloat64(i) / d
}
