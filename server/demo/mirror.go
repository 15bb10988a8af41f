package demo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/controller"
	"github.com/listwatch/listwatch/informer"
	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

const (
	// MirrorSuffix is appended to a source ConfigMap's name to name its
	// mirror.
	MirrorSuffix = "-mirror"
	// MirrorOfAnnotation marks a ConfigMap as a mirror owned by the
	// controller; its value is the source's key ("namespace/name").
	MirrorOfAnnotation = "demo.listwatch.dev/mirror-of"
)

// ErrNotOwned is returned (as a terminal error) when a ConfigMap already
// has the mirror's name but not the annotation saying it is the source's
// mirror: the controller never overwrites what it does not own.
var ErrNotOwned = errors.New("demo: mirror name taken by a ConfigMap the controller does not own")

// Actions that Mirror reports, one per reconcile.
const (
	ActionCreated = "created mirror"
	ActionUpdated = "updated mirror"
	ActionDeleted = "deleted mirror"
	ActionInSync  = "in sync"
	ActionNoop    = "nothing to do"
)

// ConfigMapsGVR is the resource Mirror reads and writes.
var ConfigMapsGVR = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// Mirror is the reconciler: it makes <name>-mirror carry the data of
// <name>. It reads from the informer's cache and writes through the client.
type Mirror struct {
	cms    *client.Resource[*object.Unstructured]
	lister informer.Lister[*object.Unstructured]
	report func(key, action string)
}

var _ controller.Reconciler = (*Mirror)(nil)

// NewMirror returns the reconciler. cms must reach every namespace the
// lister holds (it is re-scoped per key); report, if not nil, is told what
// each successful reconcile did.
func NewMirror(cms *client.Resource[*object.Unstructured], lister informer.Lister[*object.Unstructured], report func(key, action string)) *Mirror {
	if report == nil {
		report = func(string, string) {}
	}
	return &Mirror{cms: cms, lister: lister, report: report}
}

// IsMirror reports whether o is a mirror the controller owns.
func IsMirror(o *object.Unstructured) bool {
	_, ok := o.GetAnnotations()[MirrorOfAnnotation]
	return ok
}

// SourceKey is the key to reconcile when o changes: its source's key for a
// mirror, its own key otherwise.
func SourceKey(o *object.Unstructured) string {
	if src, ok := o.GetAnnotations()[MirrorOfAnnotation]; ok && src != "" {
		return src
	}
	return object.Key(o)
}

// Reconcile implements controller.Reconciler for the source named by key.
func (m *Mirror) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := object.SplitKey(key)
	if err != nil {
		return controller.Result{}, controller.TerminalError(err)
	}
	action, err := m.reconcile(ctx, key, ns, name)
	if err != nil {
		return controller.Result{}, err
	}
	m.report(key, action)
	return controller.Result{}, nil
}

func (m *Mirror) reconcile(ctx context.Context, key, ns, name string) (string, error) {
	src, srcOK := m.lister.Get(ns, name)
	mirror, mirrorOK := m.lister.Get(ns, name+MirrorSuffix)
	if !srcOK {
		if !mirrorOK || mirror.GetAnnotations()[MirrorOfAnnotation] != key {
			return ActionNoop, nil
		}
		return m.deleteMirror(ctx, mirror)
	}
	if IsMirror(src) {
		// Mirrors are not mirrored; their own events enqueue their source.
		return ActionNoop, nil
	}
	if !mirrorOK {
		_, err := m.cms.Namespace(ns).Create(ctx, newMirror(src))
		if err == nil {
			return ActionCreated, nil
		}
		if !client.IsAlreadyExists(err) {
			return "", fmt.Errorf("create mirror of %s: %w", key, err)
		}
		// The cache is behind: read the mirror that exists and go on.
		if mirror, err = m.cms.Namespace(ns).Get(ctx, name+MirrorSuffix); err != nil {
			return "", fmt.Errorf("read mirror of %s: %w", key, err)
		}
	}
	if mirror.GetAnnotations()[MirrorOfAnnotation] != key {
		return "", controller.TerminalError(fmt.Errorf("%s%s: %w", key, MirrorSuffix, ErrNotOwned))
	}
	if sameData(src, mirror) {
		return ActionInSync, nil
	}
	updated := mirror.DeepCopy() // cached objects are shared: never mutate them
	setData(updated, src)
	if _, err := m.cms.Namespace(ns).Update(ctx, updated); err != nil {
		// A Conflict means the cache was stale; the retry reads it again.
		return "", fmt.Errorf("update mirror of %s: %w", key, err)
	}
	return ActionUpdated, nil
}

func (m *Mirror) deleteMirror(ctx context.Context, mirror *object.Unstructured) (string, error) {
	// The precondition keeps a mirror someone re-created meanwhile.
	rv := mirror.GetResourceVersion()
	_, err := m.cms.Namespace(mirror.GetNamespace()).Delete(ctx, mirror.GetName(),
		wire.DeleteOptions{Preconditions: &wire.Preconditions{ResourceVersion: &rv}})
	if err != nil && !client.IsNotFound(err) {
		return "", fmt.Errorf("delete mirror %s: %w", object.Key(mirror), err)
	}
	return ActionDeleted, nil
}

// newMirror is the mirror src should have.
func newMirror(src *object.Unstructured) *object.Unstructured {
	m := &object.Unstructured{}
	m.SetAPIVersion("v1")
	m.SetKind("ConfigMap")
	m.SetNamespace(src.GetNamespace())
	m.SetName(src.GetName() + MirrorSuffix)
	m.SetAnnotations(map[string]string{MirrorOfAnnotation: object.Key(src)})
	setData(m, src)
	return m
}

func data(o *object.Unstructured) map[string]any {
	d, _ := o.Nested("data")
	m, _ := d.(map[string]any)
	return m
}

func sameData(a, b *object.Unstructured) bool {
	da, db := data(a), data(b)
	return maps.EqualFunc(da, db, reflect.DeepEqual)
}

// setData copies src's data into dst (a copy, so the shared cached map is
// never aliased).
func setData(dst, src *object.Unstructured) {
	d := data(src)
	if len(d) == 0 {
		dst.RemoveNested("data")
		return
	}
	dst.SetNested(maps.Clone(d), "data")
}
