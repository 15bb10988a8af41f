package server

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdopenapi "k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	apiextensionsfeatures "k8s.io/apiextensions-apiserver/pkg/features"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	utilopenapi "k8s.io/apiserver/pkg/util/openapi"
	aggregatoropenapi "k8s.io/kube-aggregator/pkg/generated/openapi"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/cached"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/common/restfuladapter"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	generatedopenapi "k8s.io/kubernetes/pkg/generated/openapi"

	restful "github.com/emicklei/go-restful/v3"
)

// OpenAPI: /openapi/v2 and /openapi/v3 are kube-apiserver's documents,
// built as it builds them. The built-in resources' paths come from kube's
// endpoint installer (openapi_routes.go) and their schemas from kube's
// generated definitions (pkg/generated/openapi) through kube-openapi's
// builders; each CRD's paths and schemas come from the apiextensions
// server's builder, merged in as kube's CRD OpenAPI controllers merge
// them. kube-openapi's handler serves v2 (JSON and protobuf);
// openapi_v3.go serves v3 as kube-openapi's handler3 does (the index with
// each group-version's hash, ETags, 304s, immutable caching of a document
// asked for by its hash), keeping only each document's bytes.
//
// Nothing is built when the server starts. The built-in documents are
// built on their first request and kept (they never change); a CRD's are
// built when first asked for after it changes, and the served set is
// brought up to date with the registry's generation on each request.

// openAPIDocs holds the documents and what they are built from.
type openAPIDocs struct {
	v2 *handler.OpenAPIService
	// v2Handler serves /openapi/v2 (kube-openapi registers it on a mux).
	v2Handler http.Handler

	// builtinV2 is the built-ins' document, built on first use.
	builtinV2 cached.Value[*spec.Swagger]
	// builtinV3 holds each built-in group-version's document ("api/v1",
	// "apis/apps/v1"), built on first use.
	builtinV3 map[string]*v3Doc
	// routes are the built-ins' routes the documents are built from.
	routes *builtinRoutes
	// built is set once the built-ins' routes are built.
	built atomic.Bool

	mu sync.Mutex
	// gen is the registry generation the served set reflects; synced
	// reports whether it was ever brought up to date. guarded by mu
	gen    uint64
	synced bool
	// crds holds, by CRD name, the documents of each CRD served, keyed by
	// the hash of its definition so that an unchanged CRD is not rebuilt.
	// guarded by mu
	crds map[string]*crdOpenAPI
	// crdGVs are the group-version paths last published for CRDs.
	// guarded by mu
	crdGVs map[string]bool
	// crdGVKey is, by group-version path, the CRDs (names and hashes)
	// its document last published was built from. guarded by mu
	crdGVKey map[string]string
	// v3Docs is the served set of v3 documents by group-version path,
	// replaced (never changed) when it changes, which adds one to v3Gen;
	// v3Index is the index last built. guarded by mu
	v3Docs  map[string]*v3Doc
	v3Gen   uint64
	v3Index *v3Index
}

// crdOpenAPI is one CRD's documents: v2 (all served versions merged) and
// v3 per served version path.
type crdOpenAPI struct {
	hash string
	v2   cached.Value[*spec.Swagger]
	v3   map[string]func() (*spec3.OpenAPI, error)
}

// newOpenAPIDocs describes the resources of reg, with subs, by
// group-version path, the subresources kube's REST objects describe
// (Server.openAPISubresources).
func newOpenAPIDocs(reg *registry, subs map[string]map[string]rest.Storage) *openAPIDocs {
	o := &openAPIDocs{crds: map[string]*crdOpenAPI{}, crdGVs: map[string]bool{}, crdGVKey: map[string]string{}, builtinV3: map[string]*v3Doc{}, v3Docs: map[string]*v3Doc{}}
	gvPaths := builtinGVPaths(reg)
	o.routes = &builtinRoutes{pendingV3: len(gvPaths), build: func() (map[string]*restful.WebService, error) {
		o.built.Store(true)
		return builtinWebServices(reg, subs)
	}}
	o.builtinV2 = cached.Once(cached.Func(func() (*spec.Swagger, string, error) {
		wss, err := o.routes.get()
		defer o.routes.release(false)
		if err != nil {
			return nil, "", err
		}
		var list []*restful.WebService
		for _, p := range sortedKeys(wss) {
			list = append(list, wss[p])
		}
		sw, err := builder.BuildOpenAPISpecFromRoutes(restfuladapter.AdaptWebServices(list), openAPIV2Config())
		if err != nil {
			return nil, "", err
		}
		sw.Definitions = handler.PruneDefaults(sw.Definitions)
		return sw, uuid.New().String(), nil
	}))
	o.v2 = handler.NewOpenAPIServiceLazy(o.builtinV2)
	mux := &openAPIMux{}
	o.v2.RegisterOpenAPIVersionedService("/openapi/v2", mux)
	o.v2Handler = mux.h
	// The built-in group-versions are fixed: publish each one lazily.
	for _, gvPath := range gvPaths {
		d := newV3Doc(func() (*spec3.OpenAPI, error) { return o.routes.buildV3(gvPath) })
		d.shared = builtinV3Key(gvPath, subs[gvPath])
		d.loaded = func() { o.routes.release(true) }
		o.builtinV3[gvPath] = d
		o.v3Docs[gvPath] = d
	}
	return o
}

// builtinV3Key is the key in builtV3 of the built-in document of gvPath
// served with subs: its path and the subresources kube's REST objects
// describe (serviceaccounts/token is served only with a token issuer),
// which are all that differs between servers.
func builtinV3Key(gvPath string, subs map[string]rest.Storage) string {
	key := gvPath
	for _, name := range sortedKeys(subs) {
		key += fmt.Sprintf(" %s=%T", name, subs[name])
	}
	return key
}

// builtinRoutes builds the built-ins' routes on first use and drops them
// (about 13 MB that nothing else reads) once every built-in v3 document
// has been built from them, as serve builds them all at start: kube's
// MutatingAdmissionPolicy plugin reads the /openapi/v3 index, whose ETags
// hash every document. The v2 document, often never asked for, builds
// them again if it comes later, and drops them too. Each v3 document is
// built once per process (builtV3): a later server's are taken as built,
// and it builds no routes for them. The v3 definitions
// (builtinV3Definitions) are held with the routes while v3 documents are
// built from them.
type builtinRoutes struct {
	build func() (map[string]*restful.WebService, error)

	mu        sync.Mutex
	wss       map[string]*restful.WebService
	err       error
	pendingV3 int // v3 documents still to be built from the routes
	// defs are builtinV3Definitions, acquired by the first v3 build.
	defs map[string]common.OpenAPIDefinition
}

// buildV3 builds the v3 document of one built-in group-version path.
func (b *builtinRoutes) buildV3(gvPath string) (*spec3.OpenAPI, error) {
	wss, err := b.get()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.defs == nil {
		b.defs = builtinV3Definitions.acquire()
	}
	defs := b.defs
	b.mu.Unlock()
	return buildBuiltinV3(wss[gvPath], gvPath, defs)
}

func (b *builtinRoutes) get() (map[string]*restful.WebService, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.wss == nil && b.err == nil {
		b.wss, b.err = b.build()
	}
	return b.wss, b.err
}

// release is called by each document once it is built; v3 says which.
func (b *builtinRoutes) release(v3 bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if v3 {
		b.pendingV3--
	}
	if b.pendingV3 <= 0 {
		b.wss = nil
		if b.defs != nil {
			b.defs = nil
			builtinV3Definitions.release()
		}
	}
}

// held reports whether the routes are kept.
func (b *builtinRoutes) held() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.wss != nil
}

// builtinBuilt reports whether the built-ins' documents were built.
func (o *openAPIDocs) builtinBuilt() bool { return o.built.Load() }

// openAPIMux captures the one handler kube-openapi registers for v2.
type openAPIMux struct{ h http.Handler }

func (m *openAPIMux) Handle(_ string, h http.Handler) { m.h = h }

// openAPIV2Config and openAPIV3Config are kube-apiserver's configs: its
// generated definitions (without the fields of disabled features), named
// by the schemes the types are registered in.
func openAPIV2Config() *common.Config {
	c := genericapiserver.DefaultOpenAPIConfig(openAPIDefinitions, openAPIDefinitionNamer())
	c.Info.Title = "Kubernetes"
	c.Info.Version = openAPIInfoVersion
	// Bearer tokens authenticate, so (as kube-apiserver's config
	// completion does) every operation names that security and may
	// answer 401.
	c.SecurityDefinitions = &spec.SecurityDefinitions{"BearerToken": &spec.SecurityScheme{SecuritySchemeProps: bearerTokenScheme}}
	c.DefaultSecurity = []map[string][]string{{"BearerToken": {}}}
	c.CommonResponses = map[int]spec.Response{http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}}}
	return c
}

// buildBuiltinV3 builds the v3 document of one built-in group-version
// path from its web service and the v3 definitions.
func buildBuiltinV3(ws *restful.WebService, gvPath string, defs map[string]common.OpenAPIDefinition) (*spec3.OpenAPI, error) {
	doc, err := builder3.BuildOpenAPISpecFromRoutes(restfuladapter.AdaptWebServices([]*restful.WebService{ws}), openAPIV3Config(defs))
	if err != nil {
		return nil, err
	}
	if g, v, ok := gvOfPath(gvPath); ok {
		filterScopedGVKs(doc, g, v)
	}
	return doc, nil
}

// builtinV3Definitions are the definitions of every v3 document, named
// as the v3 config names them (DefaultOpenAPIV3Config), computed once for
// all the documents being built, as kube-apiserver computes them once for
// all its group-versions. Computed again for each of the ~30 documents
// (the MAP plugin's poll of the index builds them all at start), they were
// 6% of the end-to-end tests' CPU, and a test server started in 2.2–2.4 s
// instead of 1.5–1.6 s. They depend only on the enabled features, fixed
// for the process, so servers of one process share them; they are dropped
// (7.5 MB) when no document is being built.
var builtinV3Definitions = sharedValue[map[string]common.OpenAPIDefinition]{make: func() map[string]common.OpenAPIDefinition {
	return genericapiserver.DefaultOpenAPIV3Config(openAPIDefinitions, openAPIDefinitionNamer()).Definitions
}}

// sharedValue is a value made when first acquired and dropped when the
// last holder releases it.
type sharedValue[T any] struct {
	make func() T

	mu    sync.Mutex
	held  int // holders; the value is made while there are any
	value T
	makes int // times made, for tests
}

func (s *sharedValue[T]) acquire() T {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == 0 {
		s.value = s.make()
		s.makes++
	}
	s.held++
	return s.value
}

func (s *sharedValue[T]) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held--; s.held == 0 {
		var zero T
		s.value = zero
	}
}

// openAPIV3BuildDefinitions returns the definitions one document is built
// from: shared, but each definition's extensions map a copy, as
// kube-openapi's builder writes into it (the namer's extensions, and it
// deletes the embedded v2 schema) while other documents built from the
// same definitions are read.
func openAPIV3BuildDefinitions(shared map[string]common.OpenAPIDefinition) common.GetOpenAPIDefinitions {
	return func(common.ReferenceCallback) map[string]common.OpenAPIDefinition {
		defs := make(map[string]common.OpenAPIDefinition, len(shared))
		for name, d := range shared {
			if d.Schema.Extensions != nil {
				d.Schema.Extensions = maps.Clone(d.Schema.Extensions)
			}
			defs[name] = d
		}
		return defs
	}
}

func openAPIV3Config(defs map[string]common.OpenAPIDefinition) *common.OpenAPIV3Config {
	// The constructor asks for the definitions with its own reference
	// callback, which names types as builtinV3Definitions' did.
	c := genericapiserver.DefaultOpenAPIV3Config(openAPIV3BuildDefinitions(defs), openAPIDefinitionNamer())
	c.Info.Title = "Kubernetes"
	c.Info.Version = openAPIInfoVersion
	c.SecuritySchemes = spec3.SecuritySchemes{"BearerToken": &spec3.SecurityScheme{SecuritySchemeProps: spec3.SecuritySchemeProps{
		Type: bearerTokenScheme.Type, Name: bearerTokenScheme.Name, In: bearerTokenScheme.In, Description: bearerTokenScheme.Description}}}
	c.DefaultSecurity = []map[string][]string{{"BearerToken": {}}}
	c.CommonResponses = map[int]*spec3.Response{http.StatusUnauthorized: {ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}}}
	return c
}

// bearerTokenScheme is kube-apiserver's description of its bearer token
// authentication.
var bearerTokenScheme = spec.SecuritySchemeProps{Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer Token authentication"}

// openAPIInfoVersion is the documents' info.version: as kube-apiserver's,
// the major.minor of the version it emulates.
var openAPIInfoVersion = func() string {
	parts := strings.SplitN(strings.TrimPrefix(GitVersion, "v"), ".", 3)
	return parts[0] + "." + parts[1]
}()

var (
	openAPIDefinitions     = utilopenapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(kubeAndAggregatorDefinitions)
	openAPIDefinitionNamer = sync.OnceValue(func() *openapinamer.DefinitionNamer {
		return openapinamer.NewDefinitionNamer(legacyscheme.Scheme, apiextensionsOpenAPIScheme, aggregatorOpenAPIScheme)
	})
)

// kubeAndAggregatorDefinitions are kube-apiserver's generated definitions
// and its aggregator's (apiregistration.k8s.io), which kube-apiserver
// merges from the aggregator's own document.
func kubeAndAggregatorDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	defs := generatedopenapi.GetOpenAPIDefinitions(ref)
	for name, def := range aggregatoropenapi.GetOpenAPIDefinitions(ref) {
		if _, ok := defs[name]; !ok {
			defs[name] = def
		}
	}
	return defs
}

// builtinGVPaths returns the group-version paths of the built-in resources.
func builtinGVPaths(reg *registry) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range reg.all() {
		if r.crd != "" {
			continue
		}
		p := gvPath(r.group, r.version)
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// builtinWebServices installs the built-in resources, and subs, one web
// service per group-version path.
func builtinWebServices(reg *registry, subs map[string]map[string]rest.Storage) (map[string]*restful.WebService, error) {
	byGV := map[string][]*resource{}
	for _, r := range reg.all() {
		if r.crd == "" {
			p := gvPath(r.group, r.version)
			byGV[p] = append(byGV[p], r)
		}
	}
	out := map[string]*restful.WebService{}
	for p, rs := range byGV {
		ws, err := openAPIWebService(rs[0].group, rs[0].version, rs, subs[p])
		if err != nil {
			return nil, fmt.Errorf("openapi %s: %w", p, err)
		}
		out[p] = ws
	}
	return out, nil
}

func gvPath(group, version string) string {
	if group == "" {
		return "api/" + version
	}
	return "apis/" + group + "/" + version
}

func gvOfPath(p string) (group, version string, ok bool) {
	parts := strings.Split(p, "/")
	switch {
	case len(parts) == 2 && parts[0] == "api":
		return "", parts[1], true
	case len(parts) == 3 && parts[0] == "apis":
		return parts[1], parts[2], true
	}
	return "", "", false
}

// sync brings the served set up to date with the registry: CRDs added,
// changed or removed since the last call.
func (o *openAPIDocs) sync(reg *registry) {
	o.mu.Lock()
	defer o.mu.Unlock()
	gen := reg.generation()
	if o.synced && gen == o.gen {
		return
	}
	// byCRD: the definition of each CRD served now and established (kube's
	// OpenAPI controllers skip one that is not).
	byCRD := map[string][]byte{}
	for _, r := range reg.all() {
		if r.crd != "" && r.crdValue != nil && !r.undiscovered {
			byCRD[r.crd] = r.crdValue
		}
	}
	changed := !o.synced
	for name := range o.crds {
		if _, ok := byCRD[name]; !ok {
			delete(o.crds, name)
			changed = true
		}
	}
	for name, value := range byCRD {
		sum := sha256.Sum256(value)
		h := hex.EncodeToString(sum[:])
		if cur := o.crds[name]; cur != nil && cur.hash == h {
			continue
		}
		changed = true
		o.crds[name] = newCRDOpenAPI(value, h)
	}
	o.gen, o.synced = gen, true
	if !changed {
		return
	}
	o.publishLocked()
}

// publishLocked publishes the merged v2 document and the v3 documents of
// the CRDs' group-versions.
func (o *openAPIDocs) publishLocked() {
	names := sortedKeys(o.crds)
	crdV2 := make([]cached.Value[*spec.Swagger], 0, len(names))
	byGV := map[string][]func() (*spec3.OpenAPI, error){}
	crdGVKeys := map[string][]string{} // the CRDs of each group-version, by name and hash
	for _, n := range names {
		c := o.crds[n]
		crdV2 = append(crdV2, c.v2)
		for p, v := range c.v3 {
			byGV[p] = append(byGV[p], v)
			crdGVKeys[p] = append(crdGVKeys[p], n+"="+c.hash)
		}
	}
	static := o.builtinV2
	o.v2.UpdateSpecLazy(cached.Once(cached.Func(func() (*spec.Swagger, string, error) {
		base, _, err := static.Get()
		if err != nil {
			return nil, "", err
		}
		var specs []*spec.Swagger
		for _, v := range crdV2 {
			if s, _, err := v.Get(); err == nil {
				specs = append(specs, s)
			}
		}
		merged, err := crdopenapi.MergeSpecs(base, specs...)
		if err != nil {
			return nil, "", err
		}
		return merged, uuid.New().String(), nil
	})))
	docs := make(map[string]*v3Doc, len(o.v3Docs))
	for p, d := range o.v3Docs {
		if !o.crdGVs[p] {
			docs[p] = d
		}
	}
	for p := range o.crdGVs {
		if _, ok := byGV[p]; !ok {
			delete(o.crdGVs, p)
			if b, ok := o.builtinV3[p]; ok {
				docs[p] = b
			}
		}
	}
	for p, vs := range byGV {
		o.crdGVs[p] = true
		key := strings.Join(crdGVKeys[p], ",")
		if d := o.v3Docs[p]; d != nil && o.crdGVKey[p] == key {
			// The same CRDs, unchanged, as last published.
			docs[p] = d
			continue
		}
		o.crdGVKey[p] = key
		if _, ok := o.builtinV3[p]; ok {
			// A built-in group-version's document is built again from
			// the routes, as it was first built, to be merged.
			vs = append([]func() (*spec3.OpenAPI, error){func() (*spec3.OpenAPI, error) {
				defer o.routes.release(false)
				return o.routes.buildV3(p)
			}}, vs...)
		}
		prev := o.v3Docs[p]
		docs[p] = newV3Doc(func() (*spec3.OpenAPI, error) {
			// A document that fails to build is left out, as kube's CRD
			// controller leaves out a CRD it cannot build, so that one
			// CRD cannot take the index down.
			var specs []*spec3.OpenAPI
			for _, v := range vs {
				if s, err := v(); err == nil {
					specs = append(specs, s)
				}
			}
			if len(specs) == 0 {
				return &spec3.OpenAPI{Version: "3.0.0", Info: &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: openAPIInfoVersion}},
					Paths: &spec3.Paths{Paths: map[string]*spec3.Path{}}, Components: &spec3.Components{Schemas: map[string]*spec.Schema{}}}, nil
			}
			merged, err := crdopenapi.MergeSpecsV3(specs...)
			if err != nil && prev != nil {
				// As kube-openapi's handler keeps serving a group's last
				// document that built.
				return prev.spec()
			}
			return merged, err
		})
	}
	for p := range o.crdGVKey {
		if !o.crdGVs[p] {
			delete(o.crdGVKey, p)
		}
	}
	o.v3Docs = docs
	o.v3Gen++
}

// newCRDOpenAPI returns the (lazily built) documents of the stored CRD
// value, as the apiextensions server's OpenAPI controllers build them.
func newCRDOpenAPI(value []byte, hash string) *crdOpenAPI {
	crd := sync.OnceValues(func() (*apiextensionsv1.CustomResourceDefinition, error) {
		c := &apiextensionsv1.CustomResourceDefinition{}
		if err := json.Unmarshal(value, c); err != nil {
			return nil, err
		}
		return c, nil
	})
	var d crdHead
	_ = json.Unmarshal(value, &d)
	selectable := utilfeature.DefaultFeatureGate.Enabled(apiextensionsfeatures.CustomResourceFieldSelectors)
	c := &crdOpenAPI{hash: hash, v3: map[string]func() (*spec3.OpenAPI, error){}}
	c.v2 = cached.Once(cached.Func(func() (*spec.Swagger, string, error) {
		def, err := crd()
		if err != nil {
			return nil, "", err
		}
		merged := &spec.Swagger{}
		for _, v := range def.Spec.Versions {
			if !v.Served {
				continue
			}
			s, err := crdopenapi.BuildOpenAPIV2(def, v.Name, crdopenapi.Options{V2: true, IncludeSelectableFields: selectable})
			if err != nil {
				return nil, "", err
			}
			s.Definitions = handler.PruneDefaults(s.Definitions)
			if merged, err = crdopenapi.MergeSpecs(merged, s); err != nil {
				return nil, "", err
			}
		}
		return merged, hash, nil
	}))
	for _, v := range d.Spec.Versions {
		if !v.Served {
			continue
		}
		version := v.Name
		// Built each time a merged document of its group-version is
		// built (once per change of the group-version's CRDs).
		c.v3[gvPath(d.Spec.Group, version)] = func() (*spec3.OpenAPI, error) {
			def, err := crd()
			if err != nil {
				return nil, err
			}
			return crdopenapi.BuildOpenAPIV3(def, version, crdopenapi.Options{V2: false, IncludeSelectableFields: selectable})
		}
	}
	return c
}

// crdHead is what the served set needs of a CRD without building it.
type crdHead struct {
	Spec struct {
		Group    string `json:"group"`
		Versions []struct {
			Name   string `json:"name"`
			Served bool   `json:"served"`
		} `json:"versions"`
	} `json:"spec"`
}

// openAPI serves /openapi/v2, /openapi/v3 and /openapi/v3/<gv path>.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimSuffix(r.URL.Path, "/")
	s.openapi.sync(s.reg)
	switch {
	case p == "/openapi/v2":
		s.openapi.v2Handler.ServeHTTP(w, r)
	case p == "/openapi/v3":
		s.openapi.serveV3Index(w, r)
	case strings.HasPrefix(p, "/openapi/v3/"):
		s.openapi.serveV3Document(w, r)
	default:
		writeNoRoute(w, r)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// filterScopedGVKs narrows the group-version-kinds of the meta types
// every group registers (WatchEvent, DeleteOptions) in the v3 document of
// group/version to that group-version's and core/v1's, as kube-apiserver
// does for its built-in group-versions.
func filterScopedGVKs(doc *spec3.OpenAPI, group, version string) {
	if doc == nil || doc.Components == nil {
		return
	}
	for _, sch := range doc.Components.Schemas {
		if sch == nil {
			continue
		}
		gvks, ok := sch.Extensions["x-kubernetes-group-version-kind"].([]any)
		if !ok || len(gvks) <= 1 {
			continue
		}
		if first, ok := gvks[0].(map[string]any); !ok || (first["kind"] != "WatchEvent" && first["kind"] != "DeleteOptions") {
			continue
		}
		var kept []any
		for _, item := range gvks {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			g, _ := m["group"].(string)
			v, _ := m["version"].(string)
			if (g == group && v == version) || (g == "" && v == "v1") {
				kept = append(kept, item)
			}
		}
		if len(kept) > 0 {
			sch.Extensions["x-kubernetes-group-version-kind"] = kept
		} else {
			delete(sch.Extensions, "x-kubernetes-group-version-kind")
		}
	}
}
