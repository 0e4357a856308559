// gen_fixture records Go's own sort.Slice orders for tests/kernels/test_gosort.py:
//
//	go run tests/data/gosort/gen_fixture.go > tests/data/gosort/fixture.json
//	go run tests/data/gosort/gen_fixture.go -seed 7 -extra extra.json   # other inputs
//
// Each case is a list of small integers (many equal: the ties whose order sort.Slice leaves
// to its algorithm) sorted by value with sort.Slice; "order" is the input indices in the
// sorted order.  The same inputs sorted by sort.Sort and slices.SortFunc (cmp.Compare) must
// give the same order; the program fails if they do not.  -extra adds the cases of a JSON
// file ({"cases": [{"values": [...]}]}), e.g. adversarial inputs built in Python.
package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
)

type item struct{ value, index int }

type byValue []item

func (s byValue) Len() int           { return len(s) }
func (s byValue) Less(i, j int) bool { return s[i].value < s[j].value }
func (s byValue) Swap(i, j int)      { s[i], s[j] = s[j], s[i] }

type fixtureCase struct {
	Pattern string `json:"pattern"`
	Values  []int  `json:"values"`
	Order   []int  `json:"order"`
}

func orderOf(items []item) []int {
	out := make([]int, len(items))
	for i, it := range items {
		out[i] = it.index
	}
	return out
}

func sorted(values []int) []int {
	mk := func() []item {
		items := make([]item, len(values))
		for i, v := range values {
			items[i] = item{v, i}
		}
		return items
	}
	a := mk()
	sort.Slice(a, func(i, j int) bool { return a[i].value < a[j].value })
	b := mk()
	sort.Sort(byValue(b))
	c := mk()
	slices.SortFunc(c, func(x, y item) int { return cmp.Compare(x.value, y.value) })
	oa, ob, oc := orderOf(a), orderOf(b), orderOf(c)
	if !slices.Equal(oa, ob) || !slices.Equal(oa, oc) {
		fmt.Fprintf(os.Stderr, "sort.Slice, sort.Sort and slices.SortFunc differ on %v\n", values)
		os.Exit(1)
	}
	return oa
}

func main() {
	seed := flag.Uint64("seed", 1, "random seed")
	extra := flag.String("extra", "", "JSON file of more inputs")
	flag.Parse()
	r := rand.New(rand.NewPCG(*seed, 2))
	var cases []fixtureCase
	add := func(pattern string, values []int) {
		cases = append(cases, fixtureCase{pattern, values, sorted(values)})
	}
	sizes := []int{}
	for n := 0; n <= 64; n++ {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, 65, 99, 128, 129, 300)
	for _, n := range sizes {
		gen := map[string]func(i int) int{
			"random-2":            func(int) int { return r.IntN(2) },
			"random-5":            func(int) int { return r.IntN(5) },
			"random-n":            func(int) int { return r.IntN(n + 1) },
			"equal":               func(int) int { return 7 },
			"ascending":           func(i int) int { return i / 3 },
			"descending":          func(i int) int { return (n - i) / 3 },
			"strictly-descending": func(i int) int { return n - i },
			"organ-pipe":          func(i int) int { return min(i, n-i) / 2 },
			"sawtooth":            func(i int) int { return i % 7 },
		}
		for _, name := range []string{"random-2", "random-5", "random-n", "equal", "ascending", "descending", "strictly-descending", "organ-pipe", "sawtooth"} {
			values := make([]int, n)
			for i := range values {
				values[i] = gen[name](i)
			}
			add(name, values)
		}
		// nearly sorted: a few swaps in ascending input (partial insertion sort)
		values := make([]int, n)
		for i := range values {
			values[i] = i / 2
		}
		for k := 0; k < 3 && n > 1; k++ {
			i, j := r.IntN(n), r.IntN(n)
			values[i], values[j] = values[j], values[i]
		}
		add("nearly-sorted", values)
	}
	if *extra != "" {
		data, err := os.ReadFile(*extra)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		var more struct {
			Cases []struct {
				Pattern string `json:"pattern"`
				Values  []int  `json:"values"`
			} `json:"cases"`
		}
		if err := json.Unmarshal(data, &more); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		for _, c := range more.Cases {
			add(c.Pattern, c.Values)
		}
	}
	enc := json.NewEncoder(os.Stdout)
	if err := enc.Encode(map[string]any{"generator": "tests/data/gosort/gen_fixture.go", "cases": cases}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
