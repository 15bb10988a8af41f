package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregv1helper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"

	"github.com/listwatch/listwatch/internal/backoff"
	"github.com/listwatch/listwatch/internal/run"
	"github.com/listwatch/listwatch/server/storage"
)

// APIServices (apiregistration.k8s.io/v1) as kube-apiserver v1.37 keeps
// them: its autoregister controller registers one APIService per built-in
// group-version it serves at start (label automanaged=onstart) and, fed
// by its crdregistration controller, one per group-version a CRD serves
// (automanaged=true); its local availability controller marks every
// APIService without a service Available (reason Local).
//
// What happens to an edited or deleted automanaged APIService follows
// kube's autoregister (checkAPIService):
//   - onstart: synced once when the server starts: created if missing,
//     its spec reset if it differs, deleted if the group-version is no
//     longer served. Afterwards edits and deletes stay until the next
//     start. An onstart-labelled APIService created after the start is
//     left alone.
//   - true: kept in sync while the server runs: re-created when deleted,
//     its spec reset when edited, deleted when no CRD serves its
//     group-version any more (also when created by a user with that label).
//   - Without the label (a user removed it) the APIService is not managed.
//
// Only the spec is reset: labels and annotations a user changed are kept,
// as kube keeps them.

const (
	// apiServiceManagedLabel is kube's autoregister label
	// (apiServiceManagedLabel; importing that package
	// would bring the aggregator's clients into the binary).
	apiServiceManagedLabel        = "kube-aggregator.kubernetes.io/automanaged"
	apiServiceManagedOnStart      = "onstart"
	apiServiceManagedContinuously = "true"
	// crdAPIServiceGroupPriority and crdAPIServiceVersionPriority are the
	// priorities kube's crdregistration controller gives the APIService of
	// a CRD's group-version.
	crdAPIServiceGroupPriority   = 1000
	crdAPIServiceVersionPriority = 100
)

// apiServicePriority is kube's controlplane/apiserver APIServicePriority.
type apiServicePriority struct{ group, version int32 }

// apiServicePriorities are kube-apiserver v1.37's APIService priorities
// (the generic control plane's DefaultGenericAPIServicePriorities merged
// with cmd/kube-apiserver/app's apiVersionPriorities) for the
// group-versions this server serves. Importing the generic ones would add
// some 400 packages of kube's control plane to the binary for one map, so
// they are listed here; TestAPIServicesLikeKube compares the APIServices
// made from them with kube-apiserver's, and the e2e test
// TestKubeAPIServicesSameAsOurs with a running kube-apiserver's.
var apiServicePriorities = map[schema.GroupVersion]apiServicePriority{
	{Group: "", Version: "v1"}:                             {18000, 1},
	{Group: "apps", Version: "v1"}:                         {17800, 15},
	{Group: "events.k8s.io", Version: "v1"}:                {17750, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:        {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:         {17600, 15},
	{Group: "autoscaling", Version: "v1"}:                  {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                  {17500, 30},
	{Group: "batch", Version: "v1"}:                        {17400, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:          {17300, 15},
	{Group: "networking.k8s.io", Version: "v1"}:            {17200, 15},
	{Group: "policy", Version: "v1"}:                       {17100, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:    {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:               {16800, 15},
	{Group: "apiextensions.k8s.io", Version: "v1"}:         {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}: {16700, 15},
	{Group: "scheduling.k8s.io", Version: "v1"}:            {16600, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:          {16500, 15},
	{Group: "node.k8s.io", Version: "v1"}:                  {16300, 15},
	{Group: "discovery.k8s.io", Version: "v1"}:             {16200, 15},
	{Group: "resource.k8s.io", Version: "v1"}:              {16200, 21},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}: {16100, 21},
	{Group: "storagemigration.k8s.io", Version: "v1"}:      {15800, 15},
}

// builtinAPIServices are the onstart APIServices of the built-in
// group-versions reg serves, by name, as kube's makeAPIService makes them:
// a group-version without a priority gets none (apiregistration.k8s.io,
// which the aggregator serves itself).
func builtinAPIServices(reg *registry) map[string]*apiregv1.APIService {
	out := map[string]*apiregv1.APIService{}
	for _, r := range reg.all() {
		if r.crd != "" {
			continue
		}
		gv := schema.GroupVersion{Group: r.group, Version: r.version}
		p, ok := apiServicePriorities[gv]
		if !ok {
			continue
		}
		a := newAutoAPIService(gv, p.group, p.version, apiServiceManagedOnStart)
		out[a.Name] = a
	}
	return out
}

func newAutoAPIService(gv schema.GroupVersion, group, version int32, managed string) *apiregv1.APIService {
	return &apiregv1.APIService{
		TypeMeta: metav1.TypeMeta{APIVersion: apiregv1.SchemeGroupVersion.String(), Kind: "APIService"},
		ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group,
			Labels: map[string]string{apiServiceManagedLabel: managed}},
		Spec: apiregv1.APIServiceSpec{Group: gv.Group, Version: gv.Version,
			GroupPriorityMinimum: group, VersionPriority: version},
	}
}

// crdGroupVersions are the group-versions a stored CRD serves (served
// versions, established or not, as kube's crdregistration reads them).
func crdGroupVersions(value []byte) []schema.GroupVersion {
	var crd struct {
		Spec struct {
			Group    string `json:"group"`
			Versions []struct {
				Name   string `json:"name"`
				Served bool   `json:"served"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if json.Unmarshal(value, &crd) != nil {
		return nil
	}
	var gvs []schema.GroupVersion
	for _, v := range crd.Spec.Versions {
		if v.Served {
			gvs = append(gvs, schema.GroupVersion{Group: crd.Spec.Group, Version: v.Name})
		}
	}
	return gvs
}

// storedAPIService is an APIService as read from storage.
type storedAPIService struct {
	obj apiregv1.APIService
	rev int64
}

// apiServices is the controller: what is desired and what is stored.
type apiServices struct {
	s        *Server
	res      *resource
	crdRes   *resource
	builtin  map[string]*apiregv1.APIService
	mu       sync.Mutex                       // guards below; taken by the loop and tests
	crds     map[string][]schema.GroupVersion // CRD name → served group-versions
	cur      map[string]storedAPIService      // APIService name → stored
	atStart  map[string]bool                  // APIServices stored when the server started
	synced   map[string]bool                  // names checked successfully once
	writes   int                              // writes made, for tests
	lastErrs map[string]error                 // for logs
}

// startAPIServices lists the CRDs and APIServices, brings the APIServices
// to what kube's controllers would make of them, and then follows both in
// g until ctx ends. Nothing is written when they already match.
func (s *Server) startAPIServices(ctx context.Context, g *run.Group) error {
	res, ok := s.reg.lookup(groupAPIRegistration, "v1", "apiservices")
	if !ok {
		return nil
	}
	crdRes, _ := s.reg.lookup(groupCRD, "v1", "customresourcedefinitions")
	a := &apiServices{s: s, res: res, crdRes: crdRes, builtin: builtinAPIServices(s.reg),
		crds: map[string][]schema.GroupVersion{}, cur: map[string]storedAPIService{},
		synced: map[string]bool{}, lastErrs: map[string]error{}}
	rev, err := a.list(ctx)
	if err != nil {
		return fmt.Errorf("server: listing APIServices: %w", err)
	}
	a.atStart = map[string]bool{}
	for name := range a.cur {
		a.atStart[name] = true
	}
	// A failed write is retried while following, as kube's controller
	// retries it (its readyz waits; this server starts serving).
	failed := a.syncAll(ctx) != nil
	s.apiServices = a
	g.Go("apiservices", func(ctx context.Context) error { return a.follow(ctx, rev, failed) })
	return nil
}

// list reads the CRDs and the APIServices at one revision.
func (a *apiServices) list(ctx context.Context) (int64, error) {
	crds := map[string][]schema.GroupVersion{}
	rev, err := a.listPrefix(ctx, a.crdRes.prefix(""), 0, func(name string, kv storage.KV) {
		crds[name] = crdGroupVersions(kv.Value)
	})
	if err != nil {
		return 0, err
	}
	cur := map[string]storedAPIService{}
	if _, err := a.listPrefix(ctx, a.res.prefix(""), rev, func(name string, kv storage.KV) {
		if o, ok := decodeAPIService(kv); ok {
			cur[name] = o
		}
	}); err != nil {
		return 0, err
	}
	a.mu.Lock()
	a.crds, a.cur = crds, cur
	a.mu.Unlock()
	return rev, nil
}

func (a *apiServices) listPrefix(ctx context.Context, prefix string, rev int64, f func(string, storage.KV)) (int64, error) {
	opts := storage.ListOptions{Limit: 500, Revision: rev}
	for {
		res, err := a.s.store.List(ctx, prefix, opts)
		if err != nil {
			return 0, err
		}
		for _, kv := range res.Items {
			f(strings.TrimPrefix(kv.Key, prefix), kv)
		}
		if !res.More || len(res.Items) == 0 {
			return res.Revision, nil
		}
		opts = storage.ListOptions{Limit: 500, Revision: res.Revision, StartKey: res.Items[len(res.Items)-1].Key + "\x00"}
	}
}

func decodeAPIService(kv storage.KV) (storedAPIService, bool) {
	var o apiregv1.APIService
	if json.Unmarshal(kv.Value, &o) != nil {
		return storedAPIService{}, false
	}
	return storedAPIService{obj: o, rev: kv.Revision}, true
}

// follow watches the CRDs and APIServices from rev and syncs what each
// change touches, until ctx ends; a compacted watch relists.
func (a *apiServices) follow(ctx context.Context, rev int64, retry bool) error {
	crdPrefix, svcPrefix := a.crdRes.prefix(""), a.res.prefix("")
	common := commonPrefix(crdPrefix, svcPrefix)
	for ctx.Err() == nil {
		if rev == 0 {
			var err error
			if rev, err = a.list(ctx); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				a.s.log.Warn("listing APIServices", slog.Any("err", err))
				if backoff.Sleep(ctx, time.Second) != nil {
					return nil
				}
				continue
			}
			retry = a.syncAll(ctx) != nil
		}
		err := a.watch(ctx, common, crdPrefix, svcPrefix, rev, retry)
		retry = false
		if ctx.Err() != nil {
			return nil
		}
		if err != nil && !errors.Is(err, storage.ErrCompacted) {
			a.s.log.Warn("watching APIServices", slog.Any("err", err))
			if backoff.Sleep(ctx, time.Second) != nil {
				return nil
			}
		}
		rev = 0 // relist
	}
	return nil
}

func commonPrefix(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return a[:i]
}

// apiServiceRetry is how soon a failed sync is retried.
const apiServiceRetry = 2 * time.Second

func (a *apiServices) watch(ctx context.Context, common, crdPrefix, svcPrefix string, rev int64, failed bool) error {
	w, err := a.s.store.Watch(ctx, common, rev, false)
	if err != nil {
		return err
	}
	defer w.Close()
	evs := make(chan storage.Event)
	errc := make(chan error, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for {
			ev, err := w.Next(wctx)
			if err != nil {
				errc <- err
				return
			}
			select {
			case evs <- ev:
			case <-wctx.Done():
				errc <- wctx.Err()
				return
			}
		}
	}()
	var retry <-chan time.Time
	if failed {
		retry = time.After(apiServiceRetry)
	}
	for {
		select {
		case err := <-errc:
			return err
		case <-retry:
			retry = nil
			if a.syncAll(ctx) != nil {
				retry = time.After(apiServiceRetry)
			}
			continue
		case ev := <-evs:
			names := a.apply(ev, crdPrefix, svcPrefix)
			failed := false
			for _, n := range names {
				if a.sync(ctx, n) != nil {
					failed = true
				}
			}
			if failed && retry == nil {
				retry = time.After(apiServiceRetry)
			}
		}
	}
}

// apply records one watch event and returns the APIService names it
// touches.
func (a *apiServices) apply(ev storage.Event, crdPrefix, svcPrefix string) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case strings.HasPrefix(ev.KV.Key, svcPrefix):
		name := strings.TrimPrefix(ev.KV.Key, svcPrefix)
		if ev.Type == storage.EventDelete {
			delete(a.cur, name)
		} else if o, ok := decodeAPIService(ev.KV); ok {
			a.cur[name] = o
		}
		return []string{name}
	case strings.HasPrefix(ev.KV.Key, crdPrefix):
		name := strings.TrimPrefix(ev.KV.Key, crdPrefix)
		var names []string
		for _, gv := range a.crds[name] {
			names = append(names, gv.Version+"."+gv.Group)
		}
		if ev.Type == storage.EventDelete {
			delete(a.crds, name)
		} else if ev.Type == storage.EventPut {
			a.crds[name] = crdGroupVersions(ev.KV.Value)
		}
		for _, gv := range a.crds[name] {
			names = append(names, gv.Version+"."+gv.Group)
		}
		return names
	}
	return nil
}

// syncAll syncs every APIService desired or stored.
func (a *apiServices) syncAll(ctx context.Context) error {
	a.mu.Lock()
	names := map[string]bool{}
	for n := range a.builtin {
		names[n] = true
	}
	for _, gvs := range a.crds {
		for _, gv := range gvs {
			names[gv.Version+"."+gv.Group] = true
		}
	}
	for n := range a.cur {
		names[n] = true
	}
	a.mu.Unlock()
	var first error
	for n := range names {
		if err := a.sync(ctx, n); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// desired is the APIService kube's controllers want named name, or nil.
// A built-in group-version wins over a CRD's of the same name.
func (a *apiServices) desiredLocked(name string) *apiregv1.APIService {
	if d, ok := a.builtin[name]; ok {
		return d
	}
	for _, gvs := range a.crds {
		for _, gv := range gvs {
			if gv.Version+"."+gv.Group == name {
				return newAutoAPIService(gv, crdAPIServiceGroupPriority, crdAPIServiceVersionPriority, apiServiceManagedContinuously)
			}
		}
	}
	return nil
}

func managedBy(o *apiregv1.APIService) string {
	return o.Labels[apiServiceManagedLabel]
}

// sync brings the APIService name to what kube's autoregister and local
// availability controllers make of it (autoregister's checkAPIService).
func (a *apiServices) sync(ctx context.Context, name string) error {
	a.mu.Lock()
	desired := a.desiredLocked(name)
	cur, exists := a.cur[name]
	hasSynced := a.synced[name]
	atStart := a.atStart[name]
	a.mu.Unlock()
	err := a.check(ctx, name, desired, cur, exists, hasSynced, atStart)
	if err == nil && exists {
		err = a.markAvailable(ctx, name, cur)
	}
	a.mu.Lock()
	if err == nil {
		a.synced[name] = true
		delete(a.lastErrs, name)
	} else if a.lastErrs[name] == nil {
		a.lastErrs[name] = err
		a.s.log.Warn("syncing APIService", slog.String("apiservice", name), slog.Any("err", err))
	}
	a.mu.Unlock()
	return err
}

func (a *apiServices) check(ctx context.Context, name string, desired *apiregv1.APIService, cur storedAPIService, exists, hasSynced, atStart bool) error {
	key := a.res.key("", name)
	switch {
	case !exists && desired == nil:
		return nil
	case desired != nil && managedBy(desired) == apiServiceManagedOnStart && hasSynced:
		return nil
	case !exists:
		return a.create(ctx, desired)
	case managedBy(&cur.obj) != apiServiceManagedOnStart && managedBy(&cur.obj) != apiServiceManagedContinuously:
		return nil // not ours
	case managedBy(&cur.obj) == apiServiceManagedOnStart && !atStart:
		return nil
	case managedBy(&cur.obj) == apiServiceManagedOnStart && hasSynced:
		return nil
	case desired == nil:
		a.count()
		if _, err := a.s.store.Delete(ctx, key, cur.rev); err != nil && !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrConflict) {
			return err
		}
		return nil // a change in the meantime is synced on its event
	case reflect.DeepEqual(cur.obj.Spec, desired.Spec):
		return nil
	}
	return a.update(ctx, key, cur, func(d *doc) { d.setField("spec", desired.Spec) })
}

func (a *apiServices) count() {
	a.mu.Lock()
	a.writes++
	a.mu.Unlock()
}

// create writes desired as kube's create would store it, with the status
// the availability controller then gives it (one write instead of two).
func (a *apiServices) create(ctx context.Context, desired *apiregv1.APIService) error {
	b, err := json.Marshal(desired)
	if err != nil {
		return err
	}
	d, err := decodeDoc(b)
	if err != nil {
		return err
	}
	r := internalRequest(ctx, http.MethodPost)
	r.Header.Set("User-Agent", "kube-apiserver/"+GitVersion) // the managedFields' manager, as kube's loopback client
	c := &call{s: a.s, res: a.res, name: desired.Name, r: r}
	if err := c.admit(d, nil, nil); err != nil {
		return fmt.Errorf("server: creating APIService %s: %w", desired.Name, err)
	}
	if desired.Spec.Service == nil {
		created, _ := d.metaTime("creationTimestamp")
		d.setField("status", localAvailable(apiregv1.APIServiceStatus{}, created))
	}
	a.count()
	if _, err := a.s.store.Create(ctx, a.res.key("", desired.Name), d.encode()); err != nil && !errors.Is(err, storage.ErrExists) {
		return fmt.Errorf("server: creating APIService %s: %w", desired.Name, err)
	}
	return nil
}

// localAvailable is st with the Available condition kube's local
// availability controller sets, transitioned at now if it changes status.
func localAvailable(st apiregv1.APIServiceStatus, now time.Time) apiregv1.APIServiceStatus {
	o := &apiregv1.APIService{Status: *st.DeepCopy()}
	c := apiregv1helper.NewLocalAvailableAPIServiceCondition()
	c.LastTransitionTime = metav1.NewTime(now.UTC().Truncate(time.Second))
	apiregv1helper.SetAPIServiceCondition(o, c)
	return o.Status
}

// markAvailable sets Available=True (Local) on an APIService without a
// service, as kube's local availability controller does.
func (a *apiServices) markAvailable(ctx context.Context, name string, cur storedAPIService) error {
	if cur.obj.Spec.Service != nil {
		return nil
	}
	st := localAvailable(cur.obj.Status, a.s.now())
	if equality.Semantic.DeepEqual(st, cur.obj.Status) {
		return nil
	}
	return a.update(ctx, a.res.key("", name), cur, func(d *doc) { d.setField("status", st) })
}

// update rewrites the stored APIService cur with change, if it is still
// at cur's revision; a conflict or a delete in the meantime is synced on
// its own event.
func (a *apiServices) update(ctx context.Context, key string, cur storedAPIService, change func(*doc)) error {
	kv, err := a.s.store.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if kv.Revision != cur.rev {
		return nil
	}
	d, err := decodeDoc(kv.Value)
	if err != nil {
		return err
	}
	change(d)
	a.count()
	if _, err := a.s.store.Update(ctx, key, d.encode(), cur.rev); err != nil && !errors.Is(err, storage.ErrConflict) && !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	return nil
}

// writeCount is the number of writes made so far.
func (a *apiServices) writeCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.writes
}
