package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
)

// metaCodec encodes and decodes meta.k8s.io/v1 and v1beta1 partial
// metadata in protobuf, as kube-apiserver's codec for them.
var metaCodec = func() *protobuf.Serializer {
	s := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(s); err != nil {
		panic(err)
	}
	if err := metav1beta1.AddMetaToScheme(s); err != nil {
		panic(err)
	}
	return protobuf.NewSerializer(s, s)
}()

// TestPartialMetadataV1beta1: partial metadata asked for in
// meta.k8s.io/v1beta1, as kube-apiserver serves it: for a GET, a list
// and a watch, in JSON and protobuf, of that version (the object, its
// list, its items and bookmarks), and so are a v1beta1 Table's rows.
// Its list in protobuf numbers its fields the other way from v1's (items
// 1, metadata 2): the bytes are those kube's codec writes for what they
// decode to.
func TestPartialMetadataV1beta1(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("p1", map[string]string{"t": "p"}, nil))
	e.must(201, "POST", cmPath, cm("p2", map[string]string{"t": "p"}, nil))
	const (
		partial     = "application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io"
		partialList = "application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io"
		beta        = "meta.k8s.io/v1beta1"
	)
	if m := e.must(200, "GET", cmPath+"/p1", nil, "Accept", partial); m["kind"] != "PartialObjectMetadata" || m["apiVersion"] != beta || path(m, "metadata", "name") != "p1" || m["data"] != nil {
		t.Errorf("GET: %v", m)
	}
	l := e.must(200, "GET", cmPath+"?labelSelector=t%3Dp&limit=1", nil, "Accept", partialList)
	items, _ := l["items"].([]any)
	if l["kind"] != "PartialObjectMetadataList" || l["apiVersion"] != beta || path(l, "metadata", "continue") == nil || len(items) != 1 ||
		items[0].(map[string]any)["apiVersion"] != beta || path(items[0].(map[string]any), "metadata", "name") != "p1" {
		t.Errorf("list: %v", l)
	}
	tbl := e.must(200, "GET", cmPath+"/p1", nil, "Accept", "application/json;as=Table;v=v1beta1;g=meta.k8s.io")
	if row := tbl["rows"].([]any)[0].(map[string]any); tbl["apiVersion"] != beta || path(row, "object", "apiVersion") != beta {
		t.Errorf("Table: %v", tbl)
	}

	// Protobuf: what kube's codec decodes, it encodes to the same bytes.
	for p, as := range map[string]string{
		cmPath + "/p1":                  "PartialObjectMetadata",
		cmPath + "?labelSelector=t%3Dp": "PartialObjectMetadataList",
	} {
		accept := "application/vnd.kubernetes.protobuf;as=" + as + ";v=v1beta1;g=meta.k8s.io"
		r := e.do("GET", p, nil, "Accept", accept)
		if r.code != 200 || r.hdr.Get("Content-Type") != mediaProto {
			t.Fatalf("%s in protobuf: %d %s %s", p, r.code, r.hdr.Get("Content-Type"), r.body)
		}
		obj, gvk, err := metaCodec.Decode(r.body, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if gvk.GroupVersion().String() != beta {
			t.Errorf("%s: %v", p, gvk)
		}
		var again bytes.Buffer
		if err := metaCodec.Encode(obj, &again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Bytes(), r.body) {
			t.Errorf("%s: serve's bytes\n %q\nkube's for what they hold\n %q", p, r.body, again.Bytes())
		}
		if l, ok := obj.(*metav1beta1.PartialObjectMetadataList); ok && (len(l.Items) != 2 || l.Items[1].Name != "p2" || l.ResourceVersion == "") {
			t.Errorf("%s: %+v", p, l)
		}
	}

	w := e.watch(cmPath+"?watch=1&labelSelector=t%3Dp&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "Accept", partial)
	for _, typ := range []string{"ADDED", "ADDED", "BOOKMARK"} {
		if ev, ok := w.next(); !ok || ev.Type != typ || ev.Object["kind"] != "PartialObjectMetadata" || ev.Object["apiVersion"] != beta {
			t.Errorf("watch: %v, want a %s of a %s PartialObjectMetadata", ev, typ, beta)
		}
	}
}

// TestPartialListEmpty: an empty PartialObjectMetadataList has
// "items": null, as kube's (which makes the list afresh from the items
// there are), in JSON and YAML, of either version; other empty lists
// have "items": [].
func TestPartialListEmpty(t *testing.T) {
	e := newEnv(t)
	for _, v := range []string{"v1", "v1beta1"} {
		accept := "application/json;as=PartialObjectMetadataList;v=" + v + ";g=meta.k8s.io"
		m := e.must(200, "GET", cmPath+"?labelSelector=t%3Dnone", nil, "Accept", accept)
		if items, ok := m["items"]; !ok || items != nil || m["apiVersion"] != "meta.k8s.io/"+v || path(m, "metadata", "resourceVersion") == nil {
			t.Errorf("%s: %v", v, m)
		}
		r := e.do("GET", cmPath+"?labelSelector=t%3Dnone", nil, "Accept", strings.Replace(accept, "json", "yaml", 1))
		if !strings.Contains(string(r.body), "\nitems: null\n") {
			t.Errorf("%s in YAML: %d %s", v, r.code, r.body)
		}
	}
	if m := e.must(200, "GET", cmPath+"?labelSelector=t%3Dnone", nil); m["items"] == nil {
		t.Errorf("ConfigMapList: %v", m)
	}
}

// TestWatchPartialListEnds: a watch asking for a PartialObjectMetadataList
// (of an event's object, which is no list) ends at its first event, a
// change or a bookmark, having sent nothing of it, as kube's, whose
// encoder fails there: 200 and an empty stream, long before its
// timeoutSeconds.
func TestWatchPartialListEnds(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, cm("w", map[string]string{"t": "w"}, nil))
	for _, tc := range []struct{ mt, ct string }{{mediaJSON, mediaJSON}, {mediaProto, mediaProto + ";stream=watch"}} {
		for _, v := range []string{"v1", "v1beta1"} {
			for _, q := range []string{"labelSelector=t%3Dw", "labelSelector=t%3Dnone&allowWatchBookmarks=true"} {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				req, _ := http.NewRequestWithContext(ctx, "GET", e.url+cmPath+"?watch=1&timeoutSeconds=600&"+q, nil)
				req.Header.Set("Accept", tc.mt+";as=PartialObjectMetadataList;v="+v+";g=meta.k8s.io")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					cancel()
					t.Fatal(err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				cancel()
				if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != tc.ct || len(body) != 0 {
					t.Errorf("%s %s, %s: %d %s %q, %v; want 200 %s and nothing", tc.mt, v, q, resp.StatusCode, resp.Header.Get("Content-Type"), body, err, tc.ct)
				}
			}
		}
	}
}

// TestErrorUnacceptableIndented: an error answering a request whose
// Accept offers no media type a Status can be written in as it is
// (partial metadata, a Table, text/html) is kube's WriteRawJSON: the
// Status in JSON indented by two spaces, with no final newline, for a
// built-in object and a custom resource alike; one accepting plain JSON
// is compact.
func TestErrorUnacceptableIndented(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", crdPath, widgetCRD("Namespaced", "v1"))
	notFound := func(gr, name string) []byte {
		st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonNotFound, Code: 404,
			Message: gr + ` "` + name + `" not found`, Details: &metav1.StatusDetails{Name: name, Kind: strings.Split(gr, ".")[0]}}
		if g, ok := strings.CutPrefix(gr, st.Details.Kind+"."); ok {
			st.Details.Group = g
		}
		b, _ := json.MarshalIndent(st, "", "  ")
		return b
	}
	for _, c := range []struct{ path, gr, accept string }{
		{cmPath + "/nope", "configmaps", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
		{cmPath + "/nope", "configmaps", "application/json;as=Table;g=meta.k8s.io;v=v1"},
		{"/apis/apps/v1/namespaces/default/deployments/nope", "deployments.apps", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
		{"/apis/example.com/v1/namespaces/default/widgets/nope", "widgets.example.com", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"},
	} {
		r := e.do("GET", c.path, nil, "Accept", c.accept)
		if want := notFound(c.gr, "nope"); r.code != 404 || !bytes.Equal(r.body, want) {
			t.Errorf("GET %s (%s): %d\n got:  %q\n want: %q", c.path, c.accept, r.code, r.body, want)
		}
	}
	if r := e.do("GET", cmPath+"/nope", nil, "Accept", "application/json"); r.code != 404 || bytes.Contains(r.body, []byte("\n ")) || !bytes.HasSuffix(r.body, []byte("}\n")) {
		t.Errorf("GET (JSON): %d %q", r.code, r.body)
	}
}
