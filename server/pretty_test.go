package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestPrettyJSON: as kube-apiserver, JSON answers are indented (two
// spaces, no final newline) for pretty=true, or for curl, Wget and
// browsers unless pretty=false; compact ones end with a newline; a watch
// stays compact, YAML and protobuf are untouched, and /version is always
// indented (kube's answers, checked against kube-apiserver v1.37.2 in
// e2e.TestKubeStrictDecodingSameAsOurs and by hand).
func TestPrettyJSON(t *testing.T) {
	e := newEnv(t)
	e.must(201, "POST", cmPath, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"},"data":{"k":"v"}}`)
	indented := func(b []byte) bool {
		var out bytes.Buffer
		return json.Indent(&out, b, "", "  ") == nil && bytes.Equal(out.Bytes(), b) && bytes.Contains(b, []byte("\n  \""))
	}
	compact := func(b []byte) bool {
		var out bytes.Buffer
		return json.Compact(&out, b) == nil && bytes.Equal(append(out.Bytes(), '\n'), b)
	}
	for _, c := range []struct {
		path, ua string
		pretty   bool
	}{
		{cmPath + "/p", "", false},
		{cmPath + "/p", "curl/8.5.0", true},
		{cmPath + "/p", "Wget/1.21", true},
		{cmPath + "/p", "Mozilla/5.0 (X11)", true},
		{cmPath + "/p?pretty=true", "", true},
		{cmPath + "/p?pretty=1", "kubectl/v1.32", true},
		{cmPath + "/p?pretty=false", "curl/8.5.0", false},
		{cmPath + "/p?pretty=", "curl/8.5.0", true}, // no value: the User-Agent decides
		{cmPath, "curl/8.5.0", true},
		{cmPath, "", false},
		{cmPath + "/missing", "curl/8.5.0", true},
		{cmPath + "/missing", "", false},
		{"/api", "curl/8.5.0", true},
		{"/api", "", false},
	} {
		r := e.do("GET", c.path, nil, "User-Agent", c.ua)
		if ok := indented(r.body); c.pretty != ok || !c.pretty && !compact(r.body) {
			t.Errorf("GET %s as %q: %d, want pretty %v:\n%s", c.path, c.ua, r.code, c.pretty, r.body)
		}
	}
	if r := e.do("GET", "/version", nil); !indented(r.body) || bytes.HasSuffix(r.body, []byte("\n")) {
		t.Errorf("/version:\n%s", r.body)
	}
	if r := e.do("GET", cmPath+"/p", nil, "User-Agent", "curl/8", "Accept", "application/yaml"); !strings.HasPrefix(string(r.body), "apiVersion: v1\n") {
		t.Errorf("YAML for curl:\n%s", r.body)
	}
	if r := e.do("GET", cmPath+"/p", nil, "User-Agent", "curl/8", "Accept", "application/vnd.kubernetes.protobuf"); !bytes.HasPrefix(r.body, []byte("k8s\x00")) {
		t.Errorf("protobuf for curl: %q", r.body)
	}

	// A watch for curl is compact, an event a line, as it happens.
	req, err := http.NewRequest("GET", e.url+cmPath+"?watch=1&resourceVersion=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "curl/8.5.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	if err != nil || !compact(line) || !bytes.HasPrefix(line, []byte(`{"type":"ADDED"`)) {
		t.Fatalf("watch for curl: %q, %v", line, err)
	}
}
