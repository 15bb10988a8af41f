package e2e

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	sigsyaml "sigs.k8s.io/yaml"
)

// The meta.k8s.io answers (Tables and partial metadata) of serve and of
// kube-apiserver side by side.

// Accept headers of the meta.k8s.io answers.
const (
	tableJSON = "application/json;as=Table;v=v1;g=meta.k8s.io"
	tableYAML = "application/yaml;as=Table;v=v1;g=meta.k8s.io"
	tablePB   = "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io"
)

// metaAccept is the Accept header asking for as (a meta.k8s.io kind) of
// version v in media type mt.
func metaAccept(mt, as, v string) string { return mt + ";as=" + as + ";v=" + v + ";g=meta.k8s.io" }

// TestKubePartialMetadataSameAsOurs asks kube-apiserver and serve for the
// same partial metadata, of meta.k8s.io/v1 and v1beta1 (which kube serves
// too, and Tables of it), of ConfigMaps and of a custom resource, as
// lists, GETs and watches, in JSON, YAML and protobuf: the same code,
// content type and body (protobuf as kube's codec decodes it; an empty
// list's items are null).
func TestKubePartialMetadataSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	cms, ws := tablesSideBySide(t, ns, kube, ours)
	var reqs []tableReq
	for _, v := range []string{"v1", "v1beta1"} {
		for _, mt := range []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"} {
			for _, as := range []string{"PartialObjectMetadata", "PartialObjectMetadataList"} {
				for _, p := range []string{cms + "?labelSelector=t%3D1", cms + "?labelSelector=t%3D1&limit=1", cms + "/a", cms + "/nope",
					ws + "?labelSelector=t%3D1", ws + "?labelSelector=t%3D1&limit=1", ws + "/w1", cms + "?labelSelector=t%3Dnone", ws + "?labelSelector=t%3Dnone"} {
					reqs = append(reqs, tableReq{p, metaAccept(mt, as, v)})
				}
			}
		}
		// A watch of PartialObjectMetadataList ends at its first event
		// (a change, or the bookmark ending the initial events), having
		// sent nothing: kube cannot encode one object as a list.
		for _, mt := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
			for _, p := range []string{cms, ws} {
				for _, as := range []string{"PartialObjectMetadata", "PartialObjectMetadataList"} {
					reqs = append(reqs, tableReq{p + "?watch=1&timeoutSeconds=1&labelSelector=t%3D1&allowWatchBookmarks=true", metaAccept(mt, as, v)})
				}
				reqs = append(reqs, tableReq{p + "?watch=1&timeoutSeconds=1&labelSelector=t%3Dnone&allowWatchBookmarks=true", metaAccept(mt, "PartialObjectMetadataList", v)})
			}
		}
		for _, p := range []string{cms + "?labelSelector=t%3D1&", ws + "/w1?", ws + "?watch=1&timeoutSeconds=1&labelSelector=t%3D1&allowWatchBookmarks=true&"} {
			for _, include := range []string{"includeObject=Metadata", "includeObject=None"} {
				reqs = append(reqs, tableReq{p + include, metaAccept("application/json", "Table", v)})
			}
		}
	}
	// The first clause kube can serve.
	reqs = append(reqs, tableReq{cms + "/a", metaAccept("application/json", "PartialObjectMetadata", "v1beta1") + ", application/json"},
		tableReq{cms + "/a", metaAccept("application/json", "PartialObjectMetadata", "v2") + ", application/json"})
	compareAnswers(t, kube, ours, reqs)
}

// TestKubeTablesSameAsOurs asks kube-apiserver and serve for the same
// Tables, of ConfigMaps and of a custom resource, as lists, GETs and
// watches, in JSON, YAML and protobuf (which a Table never is: kube's
// 406), with each includeObject: the same code, content type and body,
// member for member (rows without their object have "object": null; a
// watch's Tables after its first have no column definitions), once the
// values that differ between two servers are masked. An includeObject
// kube does not know is its 400, a watch's before it starts.
func TestKubeTablesSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	cms, ws := tablesSideBySide(t, ns, kube, ours)
	var reqs []tableReq
	for _, p := range []string{cms + "?labelSelector=t%3D1&", cms + "/a?", ws + "?labelSelector=t%3D1&", ws + "/w1?", cms + "?labelSelector=t%3Dnone&"} {
		for _, include := range []string{"", "includeObject=None", "includeObject=Metadata", "includeObject=Object", "includeObject=bogus"} {
			for _, accept := range []string{tableJSON, tableYAML, tablePB} {
				reqs = append(reqs, tableReq{p + include, accept})
			}
		}
	}
	for _, p := range []string{cms, ws} {
		for _, q := range []string{"", "&includeObject=None", "&includeObject=Metadata", "&includeObject=Object", "&includeObject=bogus", "&includeObject=None&allowWatchBookmarks=true"} {
			reqs = append(reqs, tableReq{p + "?watch=1&timeoutSeconds=1&labelSelector=t%3D1" + q, tableJSON})
		}
	}
	reqs = append(reqs, tableReq{cms + "/nope?includeObject=bogus", tableJSON}, tableReq{cms + "?includeObject=bogus&limit=x", tableJSON})
	compareAnswers(t, kube, ours, reqs)
}

// tablesSideBySide makes the same objects on each server for the Table
// tests: ConfigMaps a (labelled t=1, with data) and b (not labelled), and
// Widgets w1 and w2 (both labelled), and returns the collections.
func tablesSideBySide(t *testing.T, ns string, kube, ours *rawClient) (cms, ws string) {
	t.Helper()
	cms = "/api/v1/namespaces/" + ns + "/configmaps"
	ws, widget := widgetsSideBySide(t, ns, `{"spec":{"n":1}}`, kube, ours)
	labelled := func(w string) string {
		return strings.Replace(w, `"metadata":{`, `"metadata":{"labels":{"t":"1"},`, 1)
	}
	for _, c := range []*rawClient{kube, ours} {
		for _, pb := range [][2]string{
			{cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"t":"1"}},"data":{"k":"v"}}`},
			{cms, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`},
			{ws, labelled(widget("w1"))},
			{ws, labelled(widget("w2"))},
		} {
			if code, m := c.do("POST", pb[0], jsonCT, pb[1]); code != http.StatusCreated {
				t.Fatalf("%s: %d %v", pb[0], code, m)
			}
		}
	}
	return cms, ws
}

// tableReq is one GET: its path and query, and its Accept header.
type tableReq struct{ path, accept string }

// compareAnswers sends each request to kube-apiserver and to serve, 16 at
// a time (a watch lasts its timeoutSeconds), and requires the same
// canonical answers (canonicalAnswer).
func compareAnswers(t *testing.T, kube, ours *rawClient, reqs []tableReq) {
	t.Helper()
	type answer struct {
		view string
		err  error
	}
	answers := make([][2]answer, len(reqs))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, r := range reqs {
		for j, c := range []*rawClient{kube, ours} {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				code, ctype, body, err := c.getAccepting(r.path, r.accept)
				answers[i][j] = answer{canonicalAnswer(code, ctype, body), err}
			})
		}
	}
	wg.Wait()
	for i, r := range reqs {
		k, o := answers[i][0], answers[i][1]
		if k.err != nil || o.err != nil {
			t.Fatalf("GET %s [%s]: kube %v, serve %v", r.path, r.accept, k.err, o.err)
		}
		if k.view != o.view {
			t.Errorf("GET %s [%s]:\n kube:  %s\n serve: %s", r.path, r.accept, k.view, o.view)
		}
	}
}

// getAccepting GETs path with an Accept header and reads the whole
// answer; unlike send, from any goroutine.
func (c *rawClient) getAccepting(path, accept string) (code int, ctype string, body []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", c.host+path, nil)
	if err != nil {
		return 0, "", nil, err
	}
	req.Header.Set("Accept", accept)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), body, err
}

// canonicalAnswer is what is compared of an answer: its code, content
// type and body, each JSON value of it (a watch's events, one a line)
// with its members sorted (README: serve's are not in kube's order) and
// the values that differ between two servers masked (volatile, and
// continue tokens); YAML as its JSON, protobuf as what kube's codec
// decodes (protoJSON). A watch's bookmarks that do not end the initial
// events are left out: kube may send them before its timeout.
func canonicalAnswer(code int, ctype string, body []byte) string {
	var err error
	switch {
	case strings.HasPrefix(ctype, "application/yaml"):
		body, err = sigsyaml.YAMLToJSON(body)
	case ctype == "application/vnd.kubernetes.protobuf":
		body, err = protoJSON(body)
	case ctype == "application/vnd.kubernetes.protobuf;stream=watch":
		body, err = protoEventsJSON(body)
	case !strings.HasPrefix(ctype, "application/json"):
		err = fmt.Errorf("not a media type compared")
	}
	if err != nil {
		return fmt.Sprintf("%d %s (%v): %q", code, ctype, err, body)
	}
	var out []string
	dec := json.NewDecoder(bytes.NewReader(body))
	for {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Sprintf("%d %s not JSON (%v): %q", code, ctype, err, body)
		}
		if m, ok := v.(map[string]any); ok && m["type"] == "BOOKMARK" && !strings.Contains(fmt.Sprint(m["object"]), "k8s.io/initial-events-end") {
			continue
		}
		b, _ := json.Marshal(v) // members sorted
		b = continueToken.ReplaceAll(volatile.ReplaceAll(b, []byte(`${1}"X"`)), []byte(`"continue":"X"`))
		out = append(out, string(b))
	}
	return fmt.Sprintf("%d %s\n  %s", code, ctype, strings.Join(out, "\n  "))
}

// continueToken is a continue token that is not empty: each server's own.
var continueToken = regexp.MustCompile(`"continue":"[^"]+"`)

// metaCodec decodes protobuf bodies of partial metadata (meta.k8s.io/v1
// and v1beta1) and Statuses, as kube's codec.
var metaCodec = func() *protobuf.Serializer {
	s := runtime.NewScheme()
	if err := metav1.AddMetaToScheme(s); err != nil {
		panic(err)
	}
	if err := metav1beta1.AddMetaToScheme(s); err != nil {
		panic(err)
	}
	s.AddKnownTypes(schema.GroupVersion{Version: "v1"}, &metav1.Status{})
	return protobuf.NewSerializer(s, s)
}()

// protoJSON is the JSON of a protobuf body, as metaCodec decodes it.
func protoJSON(b []byte) ([]byte, error) {
	obj, gvk, err := metaCodec.Decode(b, nil, nil)
	if err != nil {
		return nil, err
	}
	obj.GetObjectKind().SetGroupVersionKind(*gvk)
	return json.Marshal(obj)
}

// protoEventsJSON is the JSON of a protobuf watch's events (each a
// length, then a WatchEvent whose object is a protobuf body), one a
// line.
func protoEventsJSON(b []byte) ([]byte, error) {
	var out []byte
	for len(b) > 0 {
		if len(b) < 4 || len(b) < 4+int(binary.BigEndian.Uint32(b)) {
			return nil, fmt.Errorf("a frame cut short")
		}
		n := binary.BigEndian.Uint32(b)
		var ev metav1.WatchEvent
		if err := ev.Unmarshal(b[4 : 4+n]); err != nil {
			return nil, err
		}
		obj, err := protoJSON(ev.Object.Raw)
		if err != nil {
			return nil, err
		}
		line, _ := json.Marshal(map[string]any{"type": ev.Type, "object": json.RawMessage(obj)})
		out = append(append(out, line...), '\n')
		b = b[4+n:]
	}
	return out, nil
}
