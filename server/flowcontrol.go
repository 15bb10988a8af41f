package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"

	"github.com/listwatch/listwatch/server/storage"
)

// bootstrapObjects creates the default namespaces and the flowcontrol
// objects, at once: they are independent, and each is an etcd write the
// server's start waits for.
func (s *Server) bootstrapObjects(ctx context.Context) error {
	var wg sync.WaitGroup
	var nsErr error
	wg.Go(func() { nsErr = s.bootstrapNamespaces(ctx) })
	fcErr := s.bootstrapFlowControl(ctx)
	wg.Wait()
	return errors.Join(nsErr, fcErr)
}

// bootstrapFlowControl creates kube-apiserver's mandatory and suggested
// FlowSchemas and PriorityLevelConfigurations (k8s.io/apiserver's
// flowcontrol bootstrap objects, with their auto-update annotation) that
// do not exist, as kube's APF configuration ensurer does at start. It does
// not update existing ones; a server racing another to create one loses
// quietly (ErrExists).
func (s *Server) bootstrapFlowControl(ctx context.Context) error {
	var objs []runtime.Object
	for _, o := range append(bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations...) {
		o = o.DeepCopy()
		o.APIVersion, o.Kind = flowcontrolv1.SchemeGroupVersion.String(), "PriorityLevelConfiguration"
		objs = append(objs, o)
	}
	for _, o := range append(bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas...) {
		o = o.DeepCopy()
		o.APIVersion, o.Kind = flowcontrolv1.SchemeGroupVersion.String(), "FlowSchema"
		objs = append(objs, o)
	}
	// The objects are created concurrently: etcd commits concurrent
	// writes together.
	errs := make([]error, len(objs))
	var wg sync.WaitGroup
	for i, o := range objs {
		wg.Go(func() { errs[i] = s.createFlowControlObject(ctx, o) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createFlowControlObject creates o unless it exists.
func (s *Server) createFlowControlObject(ctx context.Context, o runtime.Object) error {
	plural := "flowschemas"
	if _, ok := o.(*flowcontrolv1.PriorityLevelConfiguration); ok {
		plural = "prioritylevelconfigurations"
	}
	r, ok := s.reg.lookup(groupFlowcontrol, "v1", plural)
	if !ok {
		return nil
	}
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	d, err := decodeDoc(b)
	if err != nil {
		return err
	}
	name := d.metaString("name")
	req := internalRequest(ctx, http.MethodPost)
	req.URL.RawQuery = "fieldManager=api-priority-and-fairness-config-producer-v1" // kube's ensurer's
	c := &call{s: s, res: r, name: name, r: req}
	if err := c.admit(d, nil, nil); err != nil {
		return fmt.Errorf("server: creating %s %s: %w", plural, name, err)
	}
	if _, err := s.store.Create(ctx, r.key("", name), d.encode()); err != nil && !errors.Is(err, storage.ErrExists) {
		return fmt.Errorf("server: creating %s %s: %w", plural, name, err)
	}
	return nil
}
