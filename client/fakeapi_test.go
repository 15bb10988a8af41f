package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/listwatch/listwatch/wire"
)

// fakeAPI answers like kube-apiserver for core/v1 resources held in
// memory: get, list (limit/continue, labelSelector k=v), create, update
// with optimistic concurrency, merge/strategic/JSON patch, delete with
// preconditions and delete collection. Error bodies are wire.Status
// documents with Kubernetes' codes and reasons.
type fakeAPI struct {
	mu sync.Mutex // guards everything below
	rv int64
	// objects by resource, then by "ns/name" key.
	objects map[string]map[string]map[string]any
	// requests seen, in order.
	requests []seenRequest
	// expireContinue answers every continue request 410 Expired, or 410
	// Gone with continueGone (as older servers did).
	expireContinue, continueGone bool
	// token, when set, must be the bearer token of every request.
	token string
}

type seenRequest struct {
	method, path string
	query        url.Values
	header       http.Header
	body         []byte
}

func newFakeAPI() *fakeAPI {
	return &fakeAPI{rv: 100, objects: map[string]map[string]map[string]any{}}
}

func (f *fakeAPI) seen() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.requests...)
}

func writeStatus(w http.ResponseWriter, st *wire.Status) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(st.Code))
	_ = json.NewEncoder(w).Encode(st)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, seenRequest{method: r.Method, path: r.URL.Path, query: r.URL.Query(), header: r.Header.Clone(), body: body})
	if f.token != "" && r.Header.Get("Authorization") != "Bearer "+f.token {
		writeStatus(w, wire.NewUnauthorized())
		return
	}
	// /api/v1/[namespaces/{ns}/]{resource}[/{name}]
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/api/v1/"), "/")
	ns := ""
	if len(parts) >= 3 && parts[0] == "namespaces" {
		ns, parts = parts[1], parts[2:]
	}
	if !strings.HasPrefix(r.URL.Path, "/api/v1/") || len(parts) == 0 || len(parts) > 2 {
		writeStatus(w, &wire.Status{TypeMeta: wire.TypeMeta{Kind: "Status", APIVersion: "v1"}, Code: 404, Reason: wire.ReasonNotFound, Message: "the server could not find the requested resource"})
		return
	}
	resource, name := parts[0], ""
	if len(parts) == 2 {
		name = parts[1]
	}
	gr := wire.GroupResource{Resource: resource}
	if f.objects[resource] == nil {
		f.objects[resource] = map[string]map[string]any{}
	}
	objs := f.objects[resource]
	key := ns + "/" + name
	switch {
	case r.Method == http.MethodGet && name == "":
		f.listLocked(w, r, resource, ns)
	case r.Method == http.MethodGet:
		obj, ok := objs[key]
		if !ok {
			writeStatus(w, wire.NewNotFound(gr, name))
			return
		}
		writeJSON(w, 200, obj)
	case r.Method == http.MethodPost && name == "":
		obj, err := decodeMap(body)
		if err != nil {
			writeStatus(w, wire.NewBadRequest(err.Error()))
			return
		}
		meta := metaOf(obj)
		n, _ := meta["name"].(string)
		if gen, _ := meta["generateName"].(string); n == "" && gen != "" {
			n = gen + strconv.FormatInt(f.rv, 36)
			meta["name"] = n
		}
		if n == "" {
			writeStatus(w, wire.NewInvalid("", "ConfigMap", "", wire.StatusCause{Type: "FieldValueRequired", Field: "metadata.name", Message: "Required value: name or generateName is required"}))
			return
		}
		if _, ok := objs[ns+"/"+n]; ok {
			writeStatus(w, wire.NewAlreadyExists(gr, n))
			return
		}
		if ns != "" {
			meta["namespace"] = ns
		}
		meta["uid"] = "uid-" + n
		f.storeLocked(objs, ns+"/"+n, obj)
		writeJSON(w, 201, obj)
	case r.Method == http.MethodPut && name != "":
		obj, err := decodeMap(body)
		if err != nil {
			writeStatus(w, wire.NewBadRequest(err.Error()))
			return
		}
		cur, ok := objs[key]
		if !ok {
			writeStatus(w, wire.NewNotFound(gr, name))
			return
		}
		if rv, _ := metaOf(obj)["resourceVersion"].(string); rv != "" && rv != metaOf(cur)["resourceVersion"] {
			writeStatus(w, wire.NewConflict(gr, name, wire.ConflictModified))
			return
		}
		f.storeLocked(objs, key, obj)
		writeJSON(w, 200, obj)
	case r.Method == http.MethodPatch && name != "":
		cur, ok := objs[key]
		if !ok {
			writeStatus(w, wire.NewNotFound(gr, name))
			return
		}
		patched, err := applyPatch(r.Header.Get("Content-Type"), cur, body)
		if err != nil {
			writeStatus(w, err.(*wire.Status))
			return
		}
		f.storeLocked(objs, key, patched)
		writeJSON(w, 200, patched)
	case r.Method == http.MethodDelete && name != "":
		cur, ok := objs[key]
		if !ok {
			writeStatus(w, wire.NewNotFound(gr, name))
			return
		}
		var opts wire.DeleteOptions
		if len(body) > 0 {
			if err := json.Unmarshal(body, &opts); err != nil {
				writeStatus(w, wire.NewBadRequest(err.Error()))
				return
			}
		}
		if p := opts.Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != metaOf(cur)["resourceVersion"] {
			writeStatus(w, wire.NewConflict(gr, name, "Precondition failed: ResourceVersion in precondition: "+*p.ResourceVersion+", ResourceVersion in object meta: "+metaOf(cur)["resourceVersion"].(string)))
			return
		}
		delete(objs, key)
		writeJSON(w, 200, cur)
	case r.Method == http.MethodDelete:
		sel := r.URL.Query().Get("labelSelector")
		for k, obj := range objs {
			if inNamespace(k, ns) && matchesLabels(obj, sel) {
				delete(objs, k)
			}
		}
		writeJSON(w, 200, wire.NewSuccess())
	default:
		writeStatus(w, wire.NewMethodNotSupported(gr, r.Method))
	}
}

func (f *fakeAPI) storeLocked(objs map[string]map[string]any, key string, obj map[string]any) {
	f.rv++
	metaOf(obj)["resourceVersion"] = strconv.FormatInt(f.rv, 10)
	objs[key] = obj
}

// continueToken is the fake's opaque token: the list RV and the last key.
type continueToken struct {
	RV    string `json:"rv"`
	Start string `json:"start"`
}

func (f *fakeAPI) listLocked(w http.ResponseWriter, r *http.Request, resource, ns string) {
	q := r.URL.Query()
	listRV := strconv.FormatInt(f.rv, 10)
	after := ""
	if c := q.Get("continue"); c != "" {
		if q.Get("resourceVersion") != "" {
			writeStatus(w, wire.NewBadRequest("specifying resource version is not allowed when using continue"))
			return
		}
		if f.expireContinue && f.continueGone {
			writeStatus(w, wire.NewGone("continue token too old"))
			return
		}
		if f.expireContinue {
			writeStatus(w, wire.NewResourceExpired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."))
			return
		}
		raw, _ := base64.RawURLEncoding.DecodeString(c)
		var tok continueToken
		if err := json.Unmarshal(raw, &tok); err != nil {
			writeStatus(w, wire.NewBadRequest("continue key is not valid"))
			return
		}
		listRV, after = tok.RV, tok.Start
	}
	var keys []string
	for k, obj := range f.objects[resource] {
		if inNamespace(k, ns) && k > after && matchesLabels(obj, q.Get("labelSelector")) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	list := wire.List[map[string]any]{TypeMeta: wire.TypeMeta{Kind: "List", APIVersion: "v1"}, Items: []map[string]any{}}
	list.Metadata.ResourceVersion = listRV
	limit, _ := strconv.Atoi(q.Get("limit"))
	if limit > 0 && len(keys) > limit {
		rest := int64(len(keys) - limit)
		keys = keys[:limit]
		tok, _ := json.Marshal(continueToken{RV: listRV, Start: keys[len(keys)-1]})
		list.Metadata.Continue = base64.RawURLEncoding.EncodeToString(tok)
		list.Metadata.RemainingItemCount = &rest
	}
	for _, k := range keys {
		list.Items = append(list.Items, f.objects[resource][k])
	}
	writeJSON(w, 200, list)
}

func inNamespace(key, ns string) bool { return ns == "" || strings.HasPrefix(key, ns+"/") }

func matchesLabels(obj map[string]any, sel string) bool {
	if sel == "" {
		return true
	}
	labels, _ := metaOf(obj)["labels"].(map[string]any)
	for _, term := range strings.Split(sel, ",") {
		k, v, _ := strings.Cut(term, "=")
		if labels[k] != v {
			return false
		}
	}
	return true
}

func decodeMap(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("body is not an object")
	}
	return m, nil
}

func metaOf(obj map[string]any) map[string]any {
	m, ok := obj["metadata"].(map[string]any)
	if !ok {
		m = map[string]any{}
		obj["metadata"] = m
	}
	return m
}

func applyPatch(contentType string, cur map[string]any, patch []byte) (map[string]any, error) {
	base, _ := decodeMap(mustJSON(cur))
	switch contentType {
	case string(MergePatch), string(StrategicMergePatch):
		p, err := decodeMap(patch)
		if err != nil {
			return nil, wire.NewBadRequest(err.Error())
		}
		return mergeMaps(base, p), nil
	case string(JSONPatch):
		var ops []struct {
			Op    string `json:"op"`
			Path  string `json:"path"`
			Value any    `json:"value"`
		}
		if err := json.Unmarshal(patch, &ops); err != nil {
			return nil, wire.NewBadRequest(err.Error())
		}
		for _, op := range ops {
			segs := strings.Split(strings.TrimPrefix(op.Path, "/"), "/")
			m := base
			for _, s := range segs[:len(segs)-1] {
				next, ok := m[s].(map[string]any)
				if !ok {
					return nil, wire.NewInvalid("", "", "", wire.StatusCause{Message: "path not found: " + op.Path})
				}
				m = next
			}
			switch op.Op {
			case "add", "replace":
				m[segs[len(segs)-1]] = op.Value
			case "remove":
				delete(m, segs[len(segs)-1])
			default:
				return nil, wire.NewBadRequest("unsupported op " + op.Op)
			}
		}
		return base, nil
	}
	return nil, wire.NewUnsupportedMediaType(contentType)
}

func mergeMaps(dst, patch map[string]any) map[string]any {
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(dst, k)
		case map[string]any:
			d, ok := dst[k].(map[string]any)
			if !ok {
				d = map[string]any{}
			}
			dst[k] = mergeMaps(d, pv)
		default:
			dst[k] = v
		}
	}
	return dst
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}
