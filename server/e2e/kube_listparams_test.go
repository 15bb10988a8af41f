package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
)

// TestKubeListWatchParamsSameAsOurs lists and watches ConfigMaps with
// every combination of resourceVersion (unset, "0", one before the last
// writes, the newest, one far ahead, the largest uint64 kube parses,
// unparsable), resourceVersionMatch,
// limit, sendInitialEvents and allowWatchBookmarks, on kube-apiserver and
// on serve over the same objects, and requires the same answers: for a
// refusal the code and Status; for a list the items, whether it goes on
// (continue, remainingItemCount) and which resourceVersion it is at; for
// a watch (which ends after a second) its events in order.
func TestKubeListWatchParamsSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	path := "/api/v1/namespaces/" + ns + "/configmaps"
	rvs := map[*rawClient]map[string]string{}
	for _, c := range []*rawClient{kube, ours} {
		create := func(name string) {
			if code, m := c.do("POST", path, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`"}}`); code != http.StatusCreated {
				t.Fatalf("create %s: %d %v", name, code, m)
			}
		}
		for _, n := range []string{"a", "b", "c"} {
			create(n)
		}
		old := listRV(t, c, path)
		for _, n := range []string{"d", "e", "f"} {
			create(n)
		}
		now := listRV(t, c, path)
		n, err := strconv.ParseUint(now, 10, 64)
		if err != nil {
			t.Fatalf("resourceVersion %q: %v", now, err)
		}
		rvs[c] = map[string]string{"old": old, "now": now, "future": strconv.FormatUint(n+1_000_000, 10), "max": "18446744073709551615",
			// The newest in forms other than the canonical one.
			"0now": "0" + now, "+now": "+" + now, " now": " " + now, "now ": now + " "}
	}

	query := func(c *rawClient, q []string) string {
		v := url.Values{}
		for _, kv := range q {
			k, val, _ := strings.Cut(kv, "=")
			if r, ok := rvs[c][val]; ok && k == "resourceVersion" {
				val = r
			}
			v.Set(k, val)
		}
		return path + "?" + v.Encode()
	}
	var cases [][]string
	for _, rv := range []string{"", "resourceVersion=0", "resourceVersion=old", "resourceVersion=now", "resourceVersion=future", "resourceVersion=x1", "resourceVersion=max",
		// Non-canonical forms: "0" and the newest written otherwise, and
		// an empty one sent.
		"resourceVersion=00", "resourceVersion=0now", "resourceVersion=+now", "resourceVersion= now", "resourceVersion=now ", "resourceVersion="} {
		for _, match := range []string{"", "resourceVersionMatch=Exact", "resourceVersionMatch=NotOlderThan"} {
			for _, limit := range []string{"", "limit=2"} {
				cases = append(cases, nonEmpty(rv, match, limit))
			}
			for _, sie := range []string{"", "sendInitialEvents=true", "sendInitialEvents=false"} {
				for _, bm := range []string{"", "allowWatchBookmarks=true"} {
					cases = append(cases, nonEmpty("watch=1", "timeoutSeconds=1", rv, match, sie, bm))
				}
			}
		}
	}
	// A continued list: its resourceVersion is refused unparsed. ("0" is
	// allowed; kube then sends the rest in one page, where serve honours
	// limit, as above.)
	for _, rv := range []string{"x1", "old", "00", "0now", "+now", " now", "now ", ""} {
		var views [2]string
		for j, c := range []*rawClient{kube, ours} {
			code, m := c.do("GET", path+"?limit=2", "", "")
			md, _ := m["metadata"].(map[string]any)
			tok, _ := md["continue"].(string)
			if code != http.StatusOK || tok == "" {
				t.Fatalf("first page: %d %v", code, m)
			}
			v := rv
			if r, ok := rvs[c][rv]; ok {
				v = r
			}
			code, _, b := c.send("GET", path+"?limit=2&continue="+url.QueryEscape(tok)+"&resourceVersion="+url.QueryEscape(v), "", "application/json", "")
			views[j] = listWatchView(code, b, false, rvs[c])
		}
		if views[0] != views[1] {
			t.Errorf("continued list at resourceVersion %q:\n kube: %s\n ours: %s", rv, views[0], views[1])
		}
	}

	// A continue token continues whatever list it comes with, as kube's
	// store decodes it against the request's own prefix: a page of
	// another selector, of the ConfigMaps' own collection from a token of
	// kube's shape made here (the start key relative to the prefix, at
	// the newest revision), one whose key starts with a slash; a key that
	// is not a clean path is kube's 400.
	token := func(rv, start string) string {
		b, err := json.Marshal(map[string]any{"v": "meta.k8s.io/v1", "rv": json.Number(rv), "start": start})
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	for _, tc := range []struct{ name, query string }{
		{"another selector", "limit=2&labelSelector=x!%3Dy&continue=first"},
		{"made here", "limit=2&continue=made"},
		{"made here, key with a slash", "limit=2&continue=slash"},
		{"made here, key outside", "limit=2&continue=outside"},
		{"made here, unclean key", "limit=2&continue=unclean"},
	} {
		var views [2]string
		for j, c := range []*rawClient{kube, ours} {
			code, m := c.do("GET", path+"?limit=2", "", "")
			first, _ := m["metadata"].(map[string]any)["continue"].(string)
			if code != http.StatusOK || first == "" {
				t.Fatalf("first page: %d %v", code, m)
			}
			now := rvs[c]["now"]
			q := strings.NewReplacer(
				"continue=first", "continue="+url.QueryEscape(first),
				"continue=made", "continue="+token(now, "c\x00"),
				"continue=slash", "continue="+token(now, "/c\x00"),
				"continue=outside", "continue="+token(now, "../secrets/a"),
				"continue=unclean", "continue="+token(now, "c//d"),
			).Replace(tc.query)
			code, _, b := c.send("GET", path+"?"+q, "", "application/json", "")
			views[j] = listWatchView(code, b, false, rvs[c])
		}
		if views[0] != views[1] {
			t.Errorf("continue token %s:\n kube: %s\n ours: %s", tc.name, views[0], views[1])
		}
	}

	// The deprecated /watch/ path: its options are checked as a list's
	// (no watch=1, so kube's defaults leave them alone), and it is served
	// as a watch (from a resourceVersion ahead, it waits for the changes).
	watchPath := "/api/v1/watch/namespaces/" + ns + "/configmaps"
	for _, rv := range []string{"", "0", "00", "00&limit=2", "old", "now", "future", "max"} {
		for _, bm := range []string{"", "&allowWatchBookmarks=true"} {
			var views [2]string
			for j, c := range []*rawClient{kube, ours} {
				q := "?timeoutSeconds=1" + bm
				switch rv {
				case "":
				case "0", "00", "00&limit=2":
					q += "&resourceVersion=" + rv
				default:
					q += "&resourceVersion=" + rvs[c][rv]
				}
				code, _, b := c.send("GET", watchPath+q, "", "application/json", "")
				views[j] = listWatchView(code, b, true, rvs[c])
			}
			if views[0] != views[1] {
				t.Errorf("/watch/ path, resourceVersion %q%s:\n kube: %s\n ours: %s", rv, bm, views[0], views[1])
			}
		}
	}

	// Its continue token is dropped unread, as kube's store's watch never
	// reads it (a list refuses a bad one, or one beside a
	// resourceVersion), but a list's rules about it hold.
	for _, q := range []string{"continue=bogus", "continue=bogus&resourceVersion=old", "continue=token",
		"continue=token&resourceVersion=old", "continue=bogus&resourceVersionMatch=NotOlderThan"} {
		for _, p := range []string{watchPath, watchPath + "/a", path + "?watch=1&"} {
			var views [2]string
			for j, c := range []*rawClient{kube, ours} {
				_, m := c.do("GET", path+"?limit=2", "", "")
				tok := strings.Trim(jsonAt(m, "metadata.continue"), `"`)
				cq := strings.NewReplacer("resourceVersion=old", "resourceVersion="+rvs[c]["old"], "continue=token", "continue="+url.QueryEscape(tok)).Replace(q)
				u := p + "?timeoutSeconds=1&" + cq
				if strings.HasSuffix(p, "&") {
					u = p + "timeoutSeconds=1&" + cq
				}
				code, _, b := c.send("GET", u, "", "application/json", "")
				views[j] = listWatchView(code, b, true, rvs[c])
			}
			if views[0] != views[1] {
				t.Errorf("%s %s:\n kube: %s\n ours: %s", p, q, views[0], views[1])
			}
		}
	}

	// A /watch/ path naming an object: a field selector beside the name
	// must pin that name (else 400). (A negative timeoutSeconds ends a
	// watch at once: kube's then sends nothing, or as many initial events
	// as it can, or a 500 ERROR event for its context, by timing, so it
	// is not compared; serve's sends nothing: TestWatchNegativeTimeoutEndsAtOnce.)
	for _, q := range []string{
		watchPath + "/a?timeoutSeconds=1",
		watchPath + "/a?timeoutSeconds=1&fieldSelector=metadata.name%3Da",
		watchPath + "/a?timeoutSeconds=1&fieldSelector=metadata.name%3Db",
		watchPath + "/a?timeoutSeconds=1&fieldSelector=metadata.namespace%3D" + ns,
		watchPath + "/a?timeoutSeconds=1&fieldSelector=metadata.name!%3Db",
		watchPath + "/a?timeoutSeconds=1&fieldSelector=metadata.name%3Da,metadata.namespace%3D" + ns,
		watchPath + "/a?timeoutSeconds=1&fieldSelector=%3D%3D",
		path + "?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Db",
		path + "?watch=1&timeoutSeconds=1&fieldSelector=%3D%3D",
		path + "?fieldSelector=%3D%3D",
		path + "?fieldSelector=metadata.name%3Da&limit=1",
		path + "?fieldSelector=metadata.name%3Da,metadata.namespace%3D" + ns + "&limit=1",
		"/api/v1/configmaps?fieldSelector=metadata.name%3Da&limit=1",
		"/api/v1/namespaces?fieldSelector=metadata.name%3D" + ns + "&limit=1",
	} {
		var views [2]string
		for j, c := range []*rawClient{kube, ours} {
			code, _, b := c.send("GET", q, "", "application/json", "")
			views[j] = listWatchView(code, b, strings.Contains(q, "/watch/") || strings.Contains(q, "watch=1"), rvs[c])
		}
		if views[0] != views[1] {
			t.Errorf("GET %s:\n kube: %s\n ours: %s", q, views[0], views[1])
		}
	}

	// A GET of one object (or of a missing one) at each resourceVersion,
	// and with the export parameter kube refuses.
	for _, obj := range []string{"/a", "/zz"} {
		for _, q := range []string{"", "resourceVersion=0", "resourceVersion=old", "resourceVersion=now", "resourceVersion=future",
			"resourceVersion=abc", "resourceVersion=-1", "resourceVersion=00", "resourceVersion=18446744073709551615",
			"resourceVersion=0now", "resourceVersion=%2Bnow", "resourceVersion=%20now", "resourceVersion=now%20", "resourceVersion=",
			"resourceVersion=00&resourceVersionMatch=NotOlderThan", "resourceVersion=&resourceVersionMatch=NotOlderThan", "export=true", "export=false", "export=x", "resourceVersion=now&export=1", "timeout=abc", "timeout=30s"} {
			var views [2]string
			for j, c := range []*rawClient{kube, ours} {
				v := url.Values{}
				if q != "" {
					var err error
					if v, err = url.ParseQuery(q); err != nil {
						t.Fatal(err)
					}
				}
				if r, ok := rvs[c][v.Get("resourceVersion")]; ok {
					v.Set("resourceVersion", r)
				}
				code, _, b := c.send("GET", path+obj+"?"+v.Encode(), "", "application/json", "")
				views[j] = listWatchView(code, b, false, rvs[c])
			}
			if views[0] != views[1] {
				t.Errorf("GET %s?%s:\n kube: %s\n ours: %s", obj, q, views[0], views[1])
			}
		}
	}

	// Watches as Table rows: a bookmark comes as a Table too.
	for _, q := range []string{"", "&includeObject=None", "&includeObject=Object", "&includeObject=Metadata"} {
		var views [2]string
		for j, c := range []*rawClient{kube, ours} {
			code, _, b := c.send("GET", path+"?watch=1&timeoutSeconds=1&allowWatchBookmarks=true"+q, "", "application/json;as=Table;g=meta.k8s.io;v=v1", "")
			views[j] = tableWatchView(code, b)
		}
		if views[0] != views[1] {
			t.Errorf("Table watch%s:\n kube: %s\n ours: %s", q, views[0], views[1])
		}
	}

	// The requests change nothing and most wait (a watch for its second,
	// a list ahead of the store for kube's 3 s): send them 16 at a time,
	// then compare in order.
	type answer struct {
		code int
		body []byte
		err  error
	}
	answers := make([][2]answer, len(cases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, q := range cases {
		for j, c := range []*rawClient{kube, ours} {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				a := &answers[i][j]
				a.code, a.body, a.err = c.get(query(c, q))
			})
		}
	}
	wg.Wait()
	for i, q := range cases {
		if len(q) > 1 && q[0] == "resourceVersion=0" && q[len(q)-1] == "limit=2" {
			// serve honours limit at resourceVersion "0", where kube sends
			// one page of everything (README: a documented improvement).
			continue
		}
		var views [2]string
		for j, c := range []*rawClient{kube, ours} {
			a := answers[i][j]
			if a.err != nil {
				t.Fatalf("%s %s: %v", c.host, strings.Join(q, "&"), a.err)
			}
			views[j] = listWatchView(a.code, a.body, strings.Contains(strings.Join(q, "&"), "watch=1"), rvs[c])
		}
		k, o := views[0], views[1]
		if k != o {
			t.Errorf("%s:\n kube: %s\n ours: %s", strings.Join(q, "&"), k, o)
		}
	}
}

// tableWatchView is what is compared of a Table watch: each event's type
// and rows (their cells, but an object's age, which differs between the
// servers, and their objects' kind and the initial-events-end
// annotation).
func tableWatchView(code int, b []byte) string {
	if code != http.StatusOK {
		return fmt.Sprintf("%d %q", code, b)
	}
	var out []string
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var e struct {
			Type   string `json:"type"`
			Object struct {
				Kind string `json:"kind"`
				Rows []struct {
					Cells  []any `json:"cells"`
					Object struct {
						Kind     string `json:"kind"`
						Metadata struct {
							Name        string            `json:"name"`
							Annotations map[string]string `json:"annotations"`
						} `json:"metadata"`
					} `json:"object"`
				} `json:"rows"`
			} `json:"object"`
		}
		if err := dec.Decode(&e); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Sprintf("%d bad stream (%v): %q", code, err, b)
		}
		ev := e.Type + " " + e.Object.Kind
		for _, r := range e.Object.Rows {
			cells := r.Cells
			if e.Type != "BOOKMARK" && len(cells) > 0 {
				cells = cells[:len(cells)-1]
			}
			ev += fmt.Sprintf(" [%v %s %s %s]", cells, r.Object.Kind, r.Object.Metadata.Name, r.Object.Metadata.Annotations["k8s.io/initial-events-end"])
		}
		if e.Type == "BOOKMARK" && len(e.Object.Rows) > 0 && e.Object.Rows[0].Object.Metadata.Annotations["k8s.io/initial-events-end"] == "" {
			continue // a periodic bookmark, which kube may send before its timeout
		}
		out = append(out, ev)
	}
	return fmt.Sprintf("%d %v", code, out)
}

// get GETs path asking for JSON and reads the whole answer; unlike
// send, from any goroutine.
func (c *rawClient) get(path string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", c.host+path, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

func listRV(t *testing.T, c *rawClient, path string) string {
	t.Helper()
	code, m := c.do("GET", path, "", "")
	md, _ := m["metadata"].(map[string]any)
	rv, _ := md["resourceVersion"].(string)
	if code != http.StatusOK || rv == "" {
		t.Fatalf("list %s: %d %v", path, code, m)
	}
	return rv
}

var digitsRE = regexp.MustCompile(`\d{3,}`)

// listWatchView is what TestKubeListWatchParamsSameAsOurs compares of an
// answer, with resourceVersions named by what they are (rvs: old, now,
// future) rather than their numbers, which differ between the servers.
func listWatchView(code int, b []byte, watch bool, rvs map[string]string) string {
	// A resourceVersion at or after the newest write is "≥now": either
	// server may have written elsewhere since (leases, events).
	now, _ := strconv.ParseUint(rvs["now"], 10, 64)
	name := func(rv string) string {
		n, err := strconv.ParseUint(rv, 10, 64)
		switch {
		case err != nil:
			return fmt.Sprintf("%q", rv)
		case rv == rvs["old"]:
			return "old"
		case rv == rvs["future"]:
			return "future"
		case rv == rvs["max"]:
			return "max"
		case n >= now:
			return "≥now"
		}
		return "other"
	}
	// Numbers in messages by name too (digitsRE finds every number of
	// three digits or more; resourceVersions are longer).
	message := func(msg string) string {
		return digitsRE.ReplaceAllStringFunc(msg, func(d string) string { return "<" + name(d) + ">" })
	}
	if code != http.StatusOK || !watch {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Sprintf("%d body=%q", code, b)
		}
		if m["kind"] == "Status" {
			msg := message(fmt.Sprint(m["message"]))
			var causes, retry any
			if d, ok := m["details"].(map[string]any); ok {
				causes, retry = d["causes"], d["retryAfterSeconds"]
			}
			return fmt.Sprintf("%d %v %v %q causes=%v retry=%v", code, m["status"], m["reason"], msg, causes, retry)
		}
		md, _ := m["metadata"].(map[string]any)
		var names []string
		items, _ := m["items"].([]any)
		for _, it := range items {
			im, _ := it.(map[string]any)
			imd, _ := im["metadata"].(map[string]any)
			if n, _ := imd["name"].(string); n != "kube-root-ca.crt" {
				names = append(names, n)
			}
		}
		cont, _ := md["continue"].(string)
		return fmt.Sprintf("%d %v items=%v rv=%s continue=%t remaining=%v", code, m["kind"], names, name(fmt.Sprint(md["resourceVersion"])), cont != "", md["remainingItemCount"])
	}
	// A watch: its events in order; bookmarks only where they end the
	// initial events (kube may send others before its timeout).
	var events []string
	dec := json.NewDecoder(bytes.NewReader(b))
	for {
		var e struct {
			Type   string `json:"type"`
			Object struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name            string            `json:"name"`
					ResourceVersion string            `json:"resourceVersion"`
					Annotations     map[string]string `json:"annotations"`
				} `json:"metadata"`
				Reason  string `json:"reason"`
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"object"`
		}
		if err := dec.Decode(&e); err == io.EOF {
			break
		} else if err != nil {
			return fmt.Sprintf("%d bad stream (%v): %q", code, err, b)
		}
		switch {
		case e.Type == "BOOKMARK" && e.Object.Metadata.Annotations["k8s.io/initial-events-end"] == "true":
			events = append(events, "BOOKMARK(initial-events-end)@"+name(e.Object.Metadata.ResourceVersion))
		case e.Type == "BOOKMARK":
		case e.Type == "ERROR":
			events = append(events, fmt.Sprintf("ERROR %d %s %q", e.Object.Code, e.Object.Reason, message(e.Object.Message)))
		case e.Object.Metadata.Name == "kube-root-ca.crt":
		default:
			events = append(events, e.Type+" "+e.Object.Metadata.Name)
		}
	}
	return fmt.Sprintf("%d watch %v", code, events)
}

// TestKubeQuietWatchBookmarksSameAsOurs: a watch that allows bookmarks,
// from the newest resourceVersion of a namespace nobody writes to, gets
// no bookmark at or before that resourceVersion before its
// timeoutSeconds ends, from kube-apiserver (whose watcher drops a
// bookmark that is not newer than where the watch began) and from serve
// (which sent one 2 s before the end at the same resourceVersion; the
// Python client's Watch.stream handed it on as a BOOKMARK event).
func TestKubeQuietWatchBookmarksSameAsOurs(t *testing.T) {
	t.Parallel()
	kube, ours, ns := sideBySide(t)
	path := "/api/v1/namespaces/" + ns + "/configmaps"
	for _, c := range []struct {
		name string
		c    *rawClient
	}{{"kube", kube}, {"serve", ours}} {
		if code, m := c.c.do("POST", path, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"q"}}`); code != http.StatusCreated {
			t.Fatalf("%s: create: %d %v", c.name, code, m)
		}
		rv := listRV(t, c.c, path)
		start, err := strconv.ParseUint(rv, 10, 64)
		if err != nil {
			t.Fatalf("%s: list resourceVersion %q: %v", c.name, rv, err)
		}
		code, b, err := c.c.get(path + "?watch=1&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion=" + rv)
		if err != nil || code != http.StatusOK {
			t.Fatalf("%s: watch: %d %v %s", c.name, code, err, b)
		}
		for line := range strings.Lines(string(b)) {
			var ev struct {
				Type   string
				Object struct {
					Metadata struct{ ResourceVersion string }
				}
			}
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("%s: event %q: %v", c.name, line, err)
			}
			got, _ := strconv.ParseUint(ev.Object.Metadata.ResourceVersion, 10, 64)
			if ev.Type != "BOOKMARK" || got <= start {
				t.Errorf("%s: %s at %s from a watch at %d of a namespace nobody writes to", c.name, ev.Type, ev.Object.Metadata.ResourceVersion, start)
			}
		}
	}
}

// TestKubeExactListOfCompactedRevisionSameAsOurs: once etcd is compacted
// past a resourceVersion, an Exact list at it, or the next page of a list
// at it, is kube-apiserver's 410 even though its watch cache still holds
// that revision (its cacher drops the snapshots older than the compaction
// it learns of, and reads those from etcd); serve answered the list from
// its history.
func TestKubeExactListOfCompactedRevisionSameAsOurs(t *testing.T) {
	t.Parallel()
	ks := kubeServer(t)
	kcfg, err := clientcmd.BuildConfigFromFlags("", ks.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, "")
	kube, ours := newRawClient(t, kcfg), newRawClient(t, restConfig(t, s))
	ns := kubeNamespace(t, kubeClient(t, ks.AdminConfig()))
	if code, m := ours.do("POST", "/api/v1/namespaces", jsonCT, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+ns+`"}}`); code != http.StatusCreated {
		t.Fatalf("namespace: %d %v", code, m)
	}
	path := "/api/v1/namespaces/" + ns + "/configmaps"
	ctx := t.Context()
	old, next := map[*rawClient]string{}, map[*rawClient]string{}
	for _, c := range []*rawClient{kube, ours} {
		for _, name := range []string{"a", "a2"} {
			if code, m := c.do("POST", path, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`"}}`); code != http.StatusCreated {
				t.Fatalf("create %s: %d %v", name, code, m)
			}
		}
		old[c] = listRV(t, c, path)
		code, m := c.do("GET", path+"?limit=1", "", "")
		md, _ := m["metadata"].(map[string]any)
		if next[c], _ = md["continue"].(string); code != http.StatusOK || next[c] == "" {
			t.Fatalf("first page: %d %v", code, m)
		}
		if code, m := c.do("POST", path, jsonCT, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`); code != http.StatusCreated {
			t.Fatalf("create b: %d %v", code, m)
		}
	}
	// serve compacts through its store, which notes the revision; kube
	// learns of a compaction from the key its compactor writes, then its
	// cacher within 15 s.
	rev, err := s.Store().CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Store().Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	krev, err := ks.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ks.Etcd().Put(ctx, "compact_rev_key", strconv.FormatInt(krev, 10)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		what  string
		query func(c *rawClient) string
	}{
		{"Exact list", func(c *rawClient) string { return "resourceVersionMatch=Exact&resourceVersion=" + old[c] }},
		{"next page", func(c *rawClient) string { return "limit=1&continue=" + url.QueryEscape(next[c]) }},
	} {
		got := ours.raw("GET", path+"?"+q.query(ours), "", "")
		want := kube.raw("GET", path+"?"+q.query(kube), "", "")
		for deadline := time.Now().Add(45 * time.Second); want.code != http.StatusGone && time.Now().Before(deadline); {
			time.Sleep(250 * time.Millisecond) // kube's cacher polls the compaction every 15 s
			want = kube.raw("GET", path+"?"+q.query(kube), "", "")
		}
		if g, w := statusView(got), statusView(want); g != w {
			t.Errorf("%s at a compacted resourceVersion:\nkube:  %s\nserve: %s", q.what, w, g)
		}
		if want.code != http.StatusGone {
			t.Errorf("%s: kube answered %s, want 410", q.what, statusView(want))
		}
	}
}
