package server

import (
	"bufio"
	"compress/gzip"
	"testing"
)

const watchListQuery = "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"

// TestWatchListGzip: a watch-list stream to a client that accepts gzip is
// a series of gzip members, each readable as soon as it is flushed: the
// initial events, the end bookmark, then each later event, as kube 1.37
// sends it. A plain watch and a client without gzip get plain streams.
func TestWatchListGzip(t *testing.T) {
	e := newEnv(t)
	for i := range 50 {
		e.must(201, "POST", cmPath, cm("g"+string(rune('a'+i%26))+string(rune('a'+i/26)), nil, map[string]string{"k": "a fairly repetitive value, a fairly repetitive value"}))
	}

	w := e.watch(cmPath+watchListQuery, "Accept-Encoding", "gzip")
	if ce := w.resp.Header.Get("Content-Encoding"); ce != "gzip" {
		t.Fatalf("watch-list Content-Encoding %q", ce)
	}
	if v := w.resp.Header.Get("Vary"); v != "Accept-Encoding" {
		t.Fatalf("Vary %q", v)
	}
	zr, err := gzip.NewReader(w.resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	w.sc = bufio.NewScanner(zr)
	w.sc.Buffer(nil, 1<<20)
	added := 0
	for {
		ev, ok := w.next()
		if !ok {
			t.Fatal("stream ended before the end bookmark")
		}
		if ev.Type == "ADDED" {
			added++
		}
		if ev.Type == "BOOKMARK" {
			break
		}
	}
	if added != 50 {
		t.Fatalf("%d initial events", added)
	}
	// A later event arrives in a member of its own, decodable at once.
	e.must(201, "POST", cmPath, cm("later", nil, nil))
	w.expect("ADDED", "later")

	// A watch from a resourceVersion is a plain watch; one from "now" is a
	// watch-list by kube 1.37's defaults, gzipped too.
	rv := path(e.must(200, "GET", cmPath, nil), "metadata", "resourceVersion").(string)
	legacy := e.watch(cmPath+"?watch=1&allowWatchBookmarks=true", "Accept-Encoding", "gzip")
	if ce := legacy.resp.Header.Get("Content-Encoding"); ce != "gzip" {
		t.Fatalf("watch from now: Content-Encoding %q", ce)
	}
	legacy.close()
	for _, tc := range []struct{ name, query, accept string }{
		{"plain watch", "?watch=1&allowWatchBookmarks=true&resourceVersion=" + rv, "gzip"},
		{"watch-list without gzip", watchListQuery, "identity"},
	} {
		w := e.watch(cmPath+tc.query, "Accept-Encoding", tc.accept)
		if ce := w.resp.Header.Get("Content-Encoding"); ce != "" {
			t.Fatalf("%s: Content-Encoding %q", tc.name, ce)
		}
		e.must(201, "POST", cmPath, cm("plain-"+tc.accept+string(rune('a'+len(tc.query)%26)), nil, nil))
		for {
			ev, ok := w.next()
			if !ok {
				t.Fatalf("%s: stream ended", tc.name)
			}
			if ev.Type == "ADDED" && path(ev.Object, "metadata", "name") == "plain-"+tc.accept+string(rune('a'+len(tc.query)%26)) {
				break
			}
		}
		w.close()
	}
}

// TestWatchListGzipOff: Config.DisableWatchListCompression sends plain
// watch-list streams.
func TestWatchListGzipOff(t *testing.T) {
	e := newEnv(t, func(c *Config) { c.DisableWatchListCompression = true })
	e.must(201, "POST", cmPath, cm("x", nil, nil))
	w := e.watch(cmPath+watchListQuery, "Accept-Encoding", "gzip")
	if ce := w.resp.Header.Get("Content-Encoding"); ce != "" {
		t.Fatalf("Content-Encoding %q", ce)
	}
	w.expect("ADDED", "x")
}
