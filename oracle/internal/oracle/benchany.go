package oracle

// createAny (scheduler_perf's createAny op): Count objects (default 1) of any built-in
// kind from one template, rendered with the op's templateParams beside .Index and .Count,
// created in the op's namespace (or cluster scope) through the world's object tracker, so
// that the scheduler's informers see them as the API server's watch would send them.
// Objects of resource.k8s.io in another version than v1 are stored as v1 (what the API
// server keeps and the scheduler's informers list).

import (
	"context"
	"fmt"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/resource/install" // resource.k8s.io conversions for ConvertToVersion
)

// createPodGroups is scheduler_perf's createPodGroups (v1.37: runCreatePodGroupsOp):
// count PodGroups from the template (rendered with .Index and the templateParams; upstream
// gives no .Count), decoded strictly into the release's PodGroup type whatever apiVersion
// the file names (upstream unmarshals into schedulingapi.PodGroup and creates it through
// that version's client), created in the op's namespace, then a wait of up to 10 s until
// the scheduler's PodGroup informer holds that many there.
func (w *benchWorld) createPodGroups(ctx context.Context, op *BenchOp) error {
	tmpl, err := newObjectTemplate(op.TemplatePath, op.TemplateParams)
	if err != nil {
		return err
	}
	tmpl.noCount = true
	ns := *op.Namespace
	for i := 0; i < op.count; i++ {
		raw, err := tmpl.render(i, op.count)
		if err != nil {
			return err
		}
		obj, gvr, err := benchPodGroup(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", op.TemplatePath, err)
		}
		if err := w.store(gvr, obj, ns); err != nil {
			return fmt.Errorf("%s: %w", op.TemplatePath, err)
		}
	}
	inf, err := w.factory.ForResource(benchPodGroupResource)
	if err != nil {
		return fmt.Errorf("PodGroups: %w", err)
	}
	saved := w.timeout
	w.timeout = 10 * time.Second
	defer func() { w.timeout = saved }()
	return w.poll(ctx, "PodGroups in the scheduler's informer", func() (bool, string) {
		have, _ := inf.Lister().ByNamespace(ns).List(labels.Everything())
		return len(have) >= op.count, fmt.Sprintf("%d of %d", len(have), op.count)
	})
}

// createAny creates count objects of op's template, each of the kind its file names.
func (w *benchWorld) createAny(_ context.Context, op *BenchOp) error {
	count := 1
	if op.Count != nil || op.CountParam != "" {
		count = op.count
	}
	tmpl, err := newObjectTemplate(op.TemplatePath, op.TemplateParams)
	if err != nil {
		return err
	}
	ns := ""
	if op.Namespace != nil {
		ns = *op.Namespace
	}
	for i := 0; i < count; i++ {
		obj, err := tmpl.object(i, count)
		if err != nil {
			return err
		}
		gvr, _ := meta.UnsafeGuessKindToResource(obj.GetObjectKind().GroupVersionKind())
		if err := w.store(gvr, obj, ns); err != nil {
			return fmt.Errorf("%s: %w", op.TemplatePath, err)
		}
	}
	return nil
}

// store creates obj in namespace ns (cluster scope when empty) through the tracker, named
// from its generateName when it has no name, as the API server would.
func (w *benchWorld) store(gvr schema.GroupVersionResource, obj runtime.Object, ns string) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if ns != "" {
		m.SetNamespace(ns)
	}
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(w.generateName(ns + "/" + m.GetGenerateName())[len(ns)+1:])
	}
	if err := w.tracker.Create(gvr, obj, ns); err != nil {
		return fmt.Errorf("creating %s %s: %w", gvr.Resource, m.GetName(), err)
	}
	return nil
}

// object decodes object index of count (any registered kind), resource.k8s.io as v1.
func (t *objectTemplate) object(index, count int) (runtime.Object, error) {
	raw, err := t.render(index, count)
	if err != nil {
		return nil, err
	}
	obj, err := DecodeObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", t.path, err)
	}
	if obj == nil {
		return nil, fmt.Errorf("%s: not a kind kube-oracle knows", t.path)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Group == resourceapi.GroupName && gvk.Version != resourceapi.SchemeGroupVersion.Version {
		// through the internal version, as the API server converts
		internal, err := legacyscheme.Scheme.ConvertToVersion(obj, schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal})
		if err == nil {
			obj, err = legacyscheme.Scheme.ConvertToVersion(internal, resourceapi.SchemeGroupVersion)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s to %s: %w", t.path, gvk, resourceapi.SchemeGroupVersion, err)
		}
	}
	return obj, nil
}
