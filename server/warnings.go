package server

import (
	"net/http"
	"unicode/utf8"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// kube-apiserver's limits on a response's warnings: once their texts pass
// warningRunes runes in all, every one is cut to warningItemRunes runes
// (those already sent too), and none is added once the cut ones pass
// warningRunes again.
const (
	warningRunes     = 4 << 10
	warningItemRunes = 256
)

// responseWarnings are a response's Warning headers, recorded as
// kube-apiserver's warning recorder records them: each text once, as
// `299 - "text"` (utilnet.NewWarningHeader, which refuses control
// characters), within the limits above. A request's calls share one.
type responseWarnings struct {
	seen       map[string]bool
	ordered    []string
	written    int // runes sent
	truncating bool
}

func (r *responseWarnings) add(h http.Header, text string) {
	if text == "" || r.truncating && r.written >= warningRunes || r.seen[text] {
		return
	}
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	r.seen[text] = true
	r.ordered = append(r.ordered, text)
	n := utf8.RuneCountInString(text)
	if r.truncating {
		text, n = cutRunes(text, n)
	}
	v, err := utilnet.NewWarningHeader(299, "", text)
	if err != nil {
		return
	}
	if r.written+n <= warningRunes || r.truncating {
		r.written += n
		h.Add("Warning", v)
		return
	}
	// Past the limit: send every warning again, cut.
	r.truncating, r.written = true, 0
	h.Del("Warning")
	for _, t := range r.ordered {
		t, n := cutRunes(t, utf8.RuneCountInString(t))
		if v, err := utilnet.NewWarningHeader(299, "", t); err == nil {
			r.written += n
			h.Add("Warning", v)
		}
	}
}

// cutRunes is text (of n runes) cut to warningItemRunes runes.
func cutRunes(text string, n int) (string, int) {
	if n <= warningItemRunes {
		return text, n
	}
	return string([]rune(text)[:warningItemRunes]), warningItemRunes
}
