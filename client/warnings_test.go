package client

import (
	"context"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/listwatch/listwatch/object"
	"github.com/listwatch/listwatch/wire"
)

// TestParseWarnings: the header grammar apimachinery's
// ParseWarningHeaders reads, its test cases among these.
func TestParseWarnings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  []warning
	}{
		{"kube's", []string{`299 - "v1beta1 Foo is deprecated"`}, []warning{{299, "-", "v1beta1 Foo is deprecated"}}},
		{"escapes", []string{`299 - "say \"hi\" \\ \o/"`}, []warning{{299, "-", `say "hi" \ o/`}}},
		{"several a line", []string{`299 - "a", 299 agent "b" "Sat, 25 Aug 2012 23:34:45 GMT" ,299 - "c"`},
			[]warning{{299, "-", "a"}, {299, "agent", "b"}, {299, "-", "c"}}},
		{"several lines", []string{`299 - "a"`, `199 - "b"`}, []warning{{299, "-", "a"}, {199, "-", "b"}}},
		{"encoded word", []string{`299 - "=?UTF-8?Q?caf=C3=A9?="`}, []warning{{299, "-", "café"}}},
		{"bad encoded word kept", []string{`299 - "=?UTF-8?X?abc?="`}, []warning{{299, "-", "=?UTF-8?X?abc?="}}},
		{"a bad one ends its line", []string{`299 - "a", 99 - "b", 299 - "c"`, `299 - "d"`}, []warning{{299, "-", "a"}, {299, "-", "d"}}},
		{"unquoted text", []string{`299 - text`}, nil},
		{"unterminated text", []string{`299 - "text`}, nil},
		{"unterminated date", []string{`299 - "text" "date`}, nil},
		{"junk after date", []string{`299 - "text" "date" junk`}, nil},
		{"junk after text", []string{`299 - "text" junk`}, nil},
		{"two fields", []string{`299 -`}, nil},
		{"control character", []string{"299 - \"a\x01b\""}, nil},
		{"code of 4 digits", []string{`2990 - "a"`}, nil},
		{"empty", []string{``}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseWarnings(tc.lines); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("parseWarnings(%q) = %+v, want %+v", tc.lines, got, tc.want)
			}
		})
	}
}

func FuzzParseWarnings(f *testing.F) {
	for _, s := range []string{`299 - "a", 299 - "b \"q\"" "date"`, `299 - "=?UTF-8?Q?caf=C3=A9?="`, `1 2 3`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range parseWarnings([]string{s}) {
			if w.code < 0 || w.code > 999 || w.agent == "" {
				t.Fatalf("parsed %+v from %q", w, s)
			}
		}
	})
}

// withWarnings adds warnings to every answer of h: the texts given, a
// code-199 warning and a malformed one, which are not delivered.
func withWarnings(h http.Handler, texts ...string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, t := range texts {
			w.Header().Add("Warning", `299 - "`+strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(t)+`"`)
		}
		w.Header().Add("Warning", `199 - "not delivered"`)
		w.Header().Add("Warning", `299 - not quoted`)
		h.ServeHTTP(w, r)
	})
}

// texts keeps strings added from any goroutine until taken.
type texts struct {
	mu   sync.Mutex // guards list
	list []string
}

func (r *texts) add(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.list = append(r.list, text)
}

// take returns what was added since the last take.
func (r *texts) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.list
	r.list = nil
	return out
}

// TestWarningHandler: every request's warnings reach Config.WarningHandler:
// each page of a list, a watch, a write, an error; of a retried request,
// only the final answer's, as client-go.
func TestWarningHandler(t *testing.T) {
	api := newFakeAPI()
	var rec texts // what Config.WarningHandler gets
	mux := http.NewServeMux()
	mux.Handle("/", withWarnings(api, "deprecated", `quoted "x"`))
	mux.Handle("/watch", withWarnings(streamHandler(t, nil, 0, evAdded), "watch warning"))
	retried := 0
	mux.Handle("/retried", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if retried++; retried == 1 {
			withWarnings(http.HandlerFunc(answer(429, "0")), "from the retried answer").ServeHTTP(w, r)
			return
		}
		withWarnings(http.HandlerFunc(answer(404, "")), "from the final answer").ServeHTTP(w, r)
	}))
	srv := startTLS(t, mux)
	c := newTestClient(t, srv, func(cfg *Config) { cfg.WarningHandler = rec.add })
	cms := NewResource[*object.Unstructured](c, configMaps).Namespace("ns")
	seedConfigMaps(t, cms, 7)
	if got := rec.take(); len(got) != 14 {
		t.Fatalf("7 creates gave warnings %q", got)
	}

	if _, err := cms.ListAll(ctxT(t), wire.ListOptions{Limit: 3}); err != nil {
		t.Fatal(err)
	}
	want := []string{"deprecated", `quoted "x"`, "deprecated", `quoted "x"`, "deprecated", `quoted "x"`}
	if got := rec.take(); !slices.Equal(got, want) {
		t.Fatalf("3 pages gave warnings %q, want %q", got, want)
	}

	if _, err := cms.Get(ctxT(t), "missing"); !IsNotFound(err) {
		t.Fatal(err)
	}
	if got := rec.take(); !slices.Equal(got, want[:2]) {
		t.Fatalf("a 404 gave warnings %q", got)
	}

	resp, err := c.send(ctxT(t), request{method: http.MethodGet, path: "/watch", watch: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = drainClose(resp.Body)
	if got := rec.take(); !slices.Equal(got, []string{"watch warning"}) {
		t.Fatalf("a watch gave warnings %q", got)
	}

	if err := c.GetJSON(ctxT(t), "/retried", &struct{}{}); !IsNotFound(err) || retried != 2 {
		t.Fatalf("retried: %v after %d", err, retried)
	}
	if got := rec.take(); !slices.Equal(got, []string{"from the final answer"}) {
		t.Fatalf("a retried request gave warnings %q", got)
	}
}

// recordLogs is a slog.Handler that keeps every record's level and
// message, from Warn up.
type recordLogs struct{ texts }

func (h *recordLogs) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordLogs) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordLogs) WithGroup(string) slog.Handler            { return h }
func (h *recordLogs) Handle(_ context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.add(r.Level.String() + " " + r.Message)
	}
	return nil
}

// TestWarningsLoggedOnce: with no WarningHandler, each distinct text is
// logged once per Client, at Warn level, on Config.Logger.
func TestWarningsLoggedOnce(t *testing.T) {
	srv := startTLS(t, withWarnings(newFakeAPI(), "deprecated", "also deprecated"))
	logs := &recordLogs{}
	newC := func() *Resource[*object.Unstructured] {
		c := newTestClient(t, srv, func(cfg *Config) { cfg.Logger = slog.New(logs) })
		return NewResource[*object.Unstructured](c, configMaps).Namespace("ns")
	}
	cms := newC()
	for range 3 {
		if _, err := cms.ListAll(ctxT(t), wire.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"WARN Warning: deprecated", "WARN Warning: also deprecated"}
	if got := logs.take(); !slices.Equal(got, want) {
		t.Fatalf("logged %q, want %q", got, want)
	}
	// Another Client logs them again.
	if _, err := newC().ListAll(ctxT(t), wire.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := logs.take(); !slices.Equal(got, want) {
		t.Fatalf("second client logged %q, want %q", got, want)
	}
}
