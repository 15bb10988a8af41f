package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/listwatch/listwatch/internal/backoff"
	"github.com/listwatch/listwatch/server/storage"
	"github.com/listwatch/listwatch/wire"
)

// crdSpec is the part of an apiextensions.k8s.io/v1
// CustomResourceDefinition that decides what is served.
type crdSpec struct {
	Group string `json:"group"`
	Names struct {
		Plural     string   `json:"plural"`
		Singular   string   `json:"singular"`
		Kind       string   `json:"kind"`
		ListKind   string   `json:"listKind"`
		ShortNames []string `json:"shortNames"`
		Categories []string `json:"categories"`
	} `json:"names"`
	Scope    string `json:"scope"`
	Versions []struct {
		Name         string `json:"name"`
		Served       bool   `json:"served"`
		Storage      bool   `json:"storage"`
		Subresources struct {
			Status *json.RawMessage `json:"status"`
			Scale  *crScale         `json:"scale"`
		} `json:"subresources"`
		AdditionalPrinterColumns []struct {
			Name     string `json:"name"`
			Type     string `json:"type"`
			JSONPath string `json:"jsonPath"`
			Priority int32  `json:"priority"`
		} `json:"additionalPrinterColumns"`
		SelectableFields []struct {
			JSONPath string `json:"jsonPath"`
		} `json:"selectableFields"`
	} `json:"versions"`
}

// crdPrefix is the storage prefix of the custom resources of the CRD in
// value, whether or not it serves any version.
func crdPrefix(d *doc) (string, bool) {
	var spec crdSpec
	if !d.field("spec", &spec) || spec.Group == "" || spec.Names.Plural == "" {
		return "", false
	}
	r := &resource{keyGroup: spec.Group, plural: spec.Names.Plural}
	return r.prefix(""), true
}

// crdResources turns a stored CRD into the resources it serves: one per
// served version, under its accepted names, and none unless its names are
// accepted or it is established, as kube's crdHandler serves (one being
// deleted too, creates refused). rev is the CRD's resourceVersion.
func crdResources(value []byte) (name string, rev int64, rs []*resource, err error) {
	d, err := decodeDoc(value)
	if err != nil {
		return "", 0, nil, err
	}
	name = d.metaString("name")
	rev, _ = strconv.ParseInt(d.metaString("resourceVersion"), 10, 64)
	rs, err = crdResourcesOf(d, name)
	value = slices.Clone(value)
	for _, r := range rs {
		r.crdValue = value
	}
	return name, rev, rs, err
}

func crdResourcesOf(d *doc, name string) (rs []*resource, err error) {
	var spec crdSpec
	if !d.field("spec", &spec) {
		return nil, fmt.Errorf("crd %s: no spec", name)
	}
	var st crdStatus
	_ = d.field("status", &st)
	if !st.isTrue(string(apiextensionsv1.NamesAccepted)) && !st.isTrue(string(apiextensionsv1.Established)) {
		return nil, nil
	}
	terminating := d.metaString("deletionTimestamp") != "" || st.isTrue(string(apiextensionsv1.Terminating))
	names := st.AcceptedNames
	if names.Kind == "" {
		return nil, nil
	}
	served := 0
	for _, v := range spec.Versions {
		if v.Served {
			served++
		}
	}
	typed, err := crdDefinition(d)
	if err != nil {
		return nil, fmt.Errorf("crd %s: %w", name, err)
	}
	deprecated := crdDeprecationWarnings(typed)
	replicasPaths := crdReplicasPaths(&spec)
	singular := names.Singular
	if singular == "" {
		singular = strings.ToLower(names.Kind)
	}
	for _, v := range spec.Versions {
		if !v.Served {
			continue
		}
		r := &resource{
			group: spec.Group, version: v.Name, plural: spec.Names.Plural, singular: singular,
			kind: names.Kind, listKind: names.ListKind, shortNames: names.ShortNames,
			categories: names.Categories, namespaced: spec.Scope == "Namespaced",
			keyGroup: spec.Group, crd: name, rewriteVersion: served > 1,
			hasStatus: v.Subresources.Status != nil, scale: v.Subresources.Scale,
			terminating: terminating, undiscovered: !st.isTrue(string(apiextensionsv1.Established)),
		}
		if st.isTrue(string(apiextensionsv1.Terminating)) {
			// kube's discovery: no verb that writes an object.
			r.verbList = []string{"delete", "deletecollection", "get", "list", "watch"}
		}
		if r.scale != nil {
			r.scale.replicasPaths = replicasPaths
		}
		r.strategy = newCRStrategy(r.group, r.version, r.kind, r.namespaced, r.hasStatus, r.scale)
		r.deprecated = deprecated[v.Name]
		if r.schema, err = newCRSchema(typed, v.Name, r.kind, r.namespaced, r.hasStatus, r.scale); err != nil {
			return nil, fmt.Errorf("crd %s: %w", name, err)
		}
		if r.schema != nil {
			r.strategy = r.schema.strategy
		}
		for _, col := range v.AdditionalPrinterColumns {
			path, ok := simpleJSONPath(col.JSONPath)
			if !ok || col.Name == "Age" {
				continue
			}
			typ := "string"
			if col.Type == "date" {
				typ = "date"
			}
			r.columns = append(r.columns, column{name: col.Name, typ: typ, path: path, priority: col.Priority})
		}
		for _, f := range v.SelectableFields {
			if path, ok := simpleJSONPath(f.JSONPath); ok {
				if r.fields == nil {
					r.fields = map[string][]string{}
				}
				r.fields[strings.Join(path, ".")] = path
			}
		}
		rs = append(rs, r)
	}
	schemas := map[string]*crSchema{}
	for _, v := range spec.Versions {
		var cs *crSchema
		for _, r := range rs {
			if r.version == v.Name {
				cs = r.schema
			}
		}
		if cs == nil {
			// A version not served: only its structural schema, as
			// kube's handler builds one for every version.
			if s, err := crStructural(typed, v.Name); err == nil && s != nil {
				cs = &crSchema{structural: s, preserveUnknownFields: typed.Spec.PreserveUnknownFields}
			}
		}
		if cs != nil {
			schemas[v.Name] = cs
		}
	}
	// Conversion None: kube's storage encoder relabels a write in another
	// version to the storage version and prunes it by that version's
	// schema (toStorage); stored objects may then be in another version
	// than the one read, even with one version served.
	var storage string
	if sv := storageVersion(typed); sv != "" {
		storage = schema.GroupVersion{Group: spec.Group, Version: sv}.String()
	}
	for _, r := range rs {
		r.versionSchemas = schemas
		if len(spec.Versions) > 1 {
			r.rewriteVersion = true
			if storage != r.apiVersion() {
				r.storageAPIVersion = storage
			}
		}
	}
	return rs, nil
}

// simpleJSONPath accepts ".a.b.c" and returns its segments.
func simpleJSONPath(p string) ([]string, bool) {
	if !strings.HasPrefix(p, ".") || strings.ContainsAny(p, "[]*@?()'\" ") {
		return nil, false
	}
	parts := strings.Split(p[1:], ".")
	for _, s := range parts {
		if s == "" {
			return nil, false
		}
	}
	return parts, true
}

// applyCRD serves what a stored CRD (with its resourceVersion) defines,
// replacing what it served before, unless a newer change of it was
// applied already. A CRD that would shadow a served resource is not
// served.
func (s *Server) applyCRD(value []byte) error { return s.applyCRDAsOf(value, 0) }

// applyCRDAsOf is applyCRD as of revision min if the CRD's own is older:
// what its revision's change would be taken for was applied already, and
// value is its state after that (read afresh).
func (s *Server) applyCRDAsOf(value []byte, min int64) error {
	name, rev, rs, err := crdResources(value)
	if err != nil {
		return err
	}
	rev = max(rev, min)
	if len(rs) == 0 {
		s.unserveCRD(name, rev)
		return nil
	}
	if s.reg.staleCRD(name, rev) {
		return nil // an older definition than the one served
	}
	s.attachConversion(rs)
	return s.reg.setCRD(name, rev, rs)
}

// unserveCRD stops serving the CRD name as of revision rev (unless a
// newer change of it was applied), and drops its converter.
func (s *Server) unserveCRD(name string, rev int64) {
	if s.reg.staleCRD(name, rev) {
		return
	}
	_ = s.reg.setCRD(name, rev, nil)
	s.convMu.Lock()
	delete(s.convs, name)
	s.convMu.Unlock()
}

// attachConversion gives the resources of a CRD whose conversion strategy
// is Webhook (rs, one per served version) their converter. An update of
// the CRD that leaves what conversion depends on as it was (its status,
// most often) keeps the converter and what it remembers. One that cannot
// be made (kube's CRD validation refuses what would fail here) fails
// every conversion with its error, rather than relabelling.
func (s *Server) attachConversion(rs []*resource) {
	d, err := decodeDoc(rs[0].crdValue)
	if err != nil {
		return // crdResources decoded it already
	}
	crd, err := crdDefinition(d)
	if err != nil {
		return
	}
	def, _ := json.Marshal(struct {
		Conversion *apiextensionsv1.CustomResourceConversion
		Versions   []apiextensionsv1.CustomResourceDefinitionVersion
		Group      string
		Kind       string
		Scope      apiextensionsv1.ResourceScope
		Preserve   bool
	}{crd.Spec.Conversion, crd.Spec.Versions, crd.Spec.Group, rs[0].kind, crd.Spec.Scope, crd.Spec.PreserveUnknownFields})
	s.convMu.Lock()
	defer s.convMu.Unlock()
	if s.convs == nil {
		s.convs = map[string]convDef{}
	}
	cv := s.convs[crd.Name].cv
	if s.convs[crd.Name].def != string(def) {
		if cv, err = s.newCRConversion(crd); err != nil {
			s.log.Warn("crd conversion webhook", slog.String("crd", crd.Name), slog.Any("err", err))
			cv = &crConversion{err: wire.NewInternalError(err), unresolved: true}
		}
		if cv != nil && cv.err == nil {
			cv.prune = storagePruner(crd, rs)
			cv.schemas = rs[0].versionSchemas
		}
		s.convs[crd.Name] = convDef{def: string(def), cv: cv}
	}
	if cv == nil {
		return
	}
	for _, r := range rs {
		r.conv = cv
		r.rewriteVersion = true // stored objects may be in another version, even with one served
	}
}

// convDef is a CRD's converter and the definition it was made from.
type convDef struct {
	def string
	cv  *crConversion
}

// storagePruner prunes an object converted to crd's storage version with
// that version's schema (nil without one), as kube's storage encoder
// does.
func storagePruner(crd *apiextensionsv1.CustomResourceDefinition, rs []*resource) func(map[string]any) error {
	sv := storageVersion(crd)
	var cs *crSchema
	for _, r := range rs {
		if r.version == sv {
			cs = r.schema
		}
	}
	if cs == nil {
		cs, _ = newCRSchema(crd, sv, rs[0].kind, rs[0].namespaced, false, nil)
	}
	if cs == nil {
		return nil
	}
	return func(u map[string]any) error { _, err := cs.prune(u); return err }
}

// storageVersion is the name of crd's storage version.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// followCRDs lists the CRDs in storage, serves them, calls synced, and
// then follows their changes by watch until ctx ends. A compacted watch
// relists.
func (s *Server) followCRDs(ctx context.Context, synced func()) error {
	crdRes, _ := s.reg.lookup(groupCRD, "v1", "customresourcedefinitions")
	prefix := crdRes.prefix("")
	for ctx.Err() == nil {
		rev, err := s.loadCRDs(ctx, prefix)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Warn("listing CRDs", slog.Any("err", err))
			if backoff.Sleep(ctx, time.Second) != nil {
				return nil
			}
			continue
		}
		synced()
		if err := s.watchCRDs(ctx, prefix, rev); err != nil && ctx.Err() == nil {
			s.log.Warn("watching CRDs", slog.Any("err", err))
		}
	}
	return nil
}

func (s *Server) loadCRDs(ctx context.Context, prefix string) (int64, error) {
	seen := map[string]bool{}
	var rev int64
	opts := storage.ListOptions{Limit: 500}
	for {
		res, err := s.store.List(ctx, prefix, opts)
		if err != nil {
			return 0, err
		}
		rev = res.Revision
		for _, kv := range res.Items {
			name := strings.TrimPrefix(kv.Key, prefix)
			seen[name] = true
			if err := s.applyCRD(kv.Value); err != nil {
				s.log.Warn("crd not served", slog.String("crd", name), slog.Any("err", err))
			}
			s.kickCRDFinalizer(kv.Value)
		}
		if !res.More || len(res.Items) == 0 {
			break
		}
		opts = storage.ListOptions{Limit: 500, Revision: rev, StartKey: res.Items[len(res.Items)-1].Key + "\x00"}
	}
	for _, name := range s.reg.crdNames() {
		if !seen[name] {
			s.unserveCRD(name, rev)
		}
	}
	s.reg.forgetCRDsBefore(rev)
	return rev, nil
}

func (s *Server) watchCRDs(ctx context.Context, prefix string, rev int64) error {
	w, err := s.store.Watch(ctx, prefix, rev, false)
	if err != nil {
		return err
	}
	defer w.Close()
	for {
		ev, err := w.Next(ctx)
		if err != nil {
			if errors.Is(err, storage.ErrCompacted) {
				return nil // relist
			}
			return err
		}
		name := strings.TrimPrefix(ev.KV.Key, prefix)
		switch ev.Type {
		case storage.EventPut:
			if err := s.applyCRD(ev.KV.Value); err != nil {
				s.log.Warn("crd not served", slog.String("crd", name), slog.Any("err", err))
			}
			s.kickCRDFinalizer(ev.KV.Value)
		case storage.EventDelete:
			s.unserveCRD(name, ev.KV.Revision)
		}
	}
}
