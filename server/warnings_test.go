package server

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/warning"
)

// kubeWarnings is what kube-apiserver's own warning recorder sends for
// texts added in order.
func kubeWarnings(texts []string) []string {
	rec := httptest.NewRecorder()
	filters.WithWarningRecorder(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, t := range texts {
			warning.AddWarning(r.Context(), "", t)
		}
	})).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	return rec.Header().Values("Warning")
}

func ourWarnings(texts []string) []string {
	h := http.Header{}
	var r responseWarnings
	for _, t := range texts {
		r.add(h, t)
	}
	return h.Values("Warning")
}

// FuzzWarnings: for any texts, the Warning headers are kube-apiserver's:
// the same headers, in the same order, deduplicated, escaped and cut as
// its recorder does. data is split on newlines into texts; n repeats
// them, so that the 4096-rune limit is reached.
func FuzzWarnings(f *testing.F) {
	f.Add("a\nb\na", uint8(1))
	f.Add(`unknown field "spec.x"`+"\n"+`dup "\\"`, uint8(200))
	f.Add(strings.Repeat("é", 300)+"\nshort\n"+strings.Repeat("x", 5000), uint8(3))
	f.Add("bad\x01control\nok", uint8(2))
	f.Fuzz(func(t *testing.T, data string, n uint8) {
		var texts []string
		for i := range int(n) {
			for j, s := range strings.Split(data, "\n") {
				if i > 0 && j%2 == 0 {
					s += strings.Repeat("-", i) // new texts as well as repeats
				}
				texts = append(texts, s)
			}
		}
		if got, want := ourWarnings(texts), kubeWarnings(texts); !slices.Equal(got, want) {
			t.Fatalf("warnings for %d texts:\n ours %q\n kube %q", len(texts), got, want)
		}
	})
}
