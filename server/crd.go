package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/storage"
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

// validateCRD checks what serving needs: names, scope, versions with
// exactly one storage version, and the name "<plural>.<group>".
func validateCRD(d *doc, name string) []wire.StatusCause {
	var spec crdSpec
	if !d.field("spec", &spec) {
		return []wire.StatusCause{fieldRequired("spec", "")}
	}
	var causes []wire.StatusCause
	if spec.Group == "" || !strings.Contains(spec.Group, ".") {
		causes = append(causes, fieldInvalid("spec.group", spec.Group, "should be a domain with at least one dot"))
	}
	if err := object.ValidateDNS1123Label(spec.Names.Plural); err != nil {
		causes = append(causes, fieldInvalid("spec.names.plural", spec.Names.Plural, err.Error()))
	}
	if spec.Names.Kind == "" {
		causes = append(causes, fieldRequired("spec.names.kind", ""))
	}
	if spec.Scope != "Namespaced" && spec.Scope != "Cluster" {
		causes = append(causes, fieldNotSupported("spec.scope", spec.Scope, "Cluster", "Namespaced"))
	}
	storageVersions := 0
	for _, v := range spec.Versions {
		if v.Storage {
			storageVersions++
		}
	}
	if len(spec.Versions) == 0 {
		causes = append(causes, fieldRequired("spec.versions", "must have exactly one version marked as storage version"))
	} else if storageVersions != 1 {
		causes = append(causes, fieldInvalid("spec.versions", "", "must have exactly one version marked as storage version"))
	}
	if want := spec.Names.Plural + "." + spec.Group; name != "" && name != want {
		causes = append(causes, fieldInvalid("metadata.name", name, fmt.Sprintf(`must be spec.names.plural+"."+spec.group`)))
	}
	return causes
}

// setCRDStatus records that the CRD's names are accepted and it is
// established, which kubectl and controllers wait for.
func setCRDStatus(d *doc, now time.Time) {
	var spec crdSpec
	if !d.field("spec", &spec) {
		return
	}
	var raw struct {
		Names json.RawMessage `json:"names"`
	}
	_ = json.Unmarshal(d.rest["spec"], &raw)
	names := map[string]any{}
	_ = json.Unmarshal(raw.Names, &names)
	if _, ok := names["singular"]; !ok {
		names["singular"] = strings.ToLower(spec.Names.Kind)
	}
	if _, ok := names["listKind"]; !ok {
		names["listKind"] = spec.Names.Kind + "List"
	}
	var stored []string
	for _, v := range spec.Versions {
		if v.Storage {
			stored = append(stored, v.Name)
		}
	}
	ts := now.UTC().Format(time.RFC3339)
	d.setField("status", map[string]any{
		"acceptedNames": names,
		"conditions": []map[string]string{
			{"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": ts},
			{"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": ts},
		},
		"storedVersions": stored,
	})
}

// crdResources turns a stored CRD into the resources it serves.
func crdResources(value []byte) (name string, rs []*resource, err error) {
	d, err := decodeDoc(value)
	if err != nil {
		return "", nil, err
	}
	name = d.metaString("name")
	var spec crdSpec
	if !d.field("spec", &spec) {
		return name, nil, fmt.Errorf("crd %s: no spec", name)
	}
	served := 0
	for _, v := range spec.Versions {
		if v.Served {
			served++
		}
	}
	singular := spec.Names.Singular
	if singular == "" {
		singular = strings.ToLower(spec.Names.Kind)
	}
	for _, v := range spec.Versions {
		if !v.Served {
			continue
		}
		r := &resource{
			group: spec.Group, version: v.Name, plural: spec.Names.Plural, singular: singular,
			kind: spec.Names.Kind, listKind: spec.Names.ListKind, shortNames: spec.Names.ShortNames,
			categories: spec.Names.Categories, namespaced: spec.Scope == "Namespaced",
			keyGroup: spec.Group, crd: name, rewriteVersion: served > 1,
			hasStatus: v.Subresources.Status != nil,
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
	return name, rs, nil
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

// applyCRD serves what a stored CRD defines, replacing what it served
// before.
func (s *Server) applyCRD(value []byte) error {
	name, rs, err := crdResources(value)
	if err != nil {
		return err
	}
	s.reg.setCRD(name, rs)
	return nil
}

// deleteCRDContents deletes every custom resource of the CRD in value,
// and stops serving them first so no new ones arrive meanwhile.
func (s *Server) deleteCRDContents(ctx context.Context, value []byte) error {
	name, rs, err := crdResources(value)
	if err != nil || len(rs) == 0 {
		return err
	}
	s.reg.setCRD(name, nil)
	return s.deletePrefix(ctx, rs[0].prefix(""))
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
			if !sleepCtx(ctx, time.Second) {
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
		}
		if !res.More || len(res.Items) == 0 {
			break
		}
		opts = storage.ListOptions{Limit: 500, Revision: rev, StartKey: res.Items[len(res.Items)-1].Key + "\x00"}
	}
	for _, name := range s.reg.crdNames() {
		if !seen[name] {
			s.reg.setCRD(name, nil)
		}
	}
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
		case storage.EventDelete:
			s.reg.setCRD(name, nil)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
