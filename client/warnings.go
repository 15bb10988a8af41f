package client

import (
	"context"
	"errors"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// warning is one warn-value of an HTTP Warning header (RFC 7234 5.5):
// warn-code SP warn-agent SP warn-text [SP warn-date].
type warning struct {
	code  int
	agent string
	text  string
}

// parseWarnings reads every warning in the Warning header lines given, as
// apimachinery's net.ParseWarningHeaders does: several comma-separated
// warnings a line, quoted text with backslash escapes, RFC 2047 encoded
// words decoded, an optional quoted date skipped. A malformed warning ends
// its line; the warnings before it are kept.
func parseWarnings(lines []string) []warning {
	var out []warning
	for _, line := range lines {
		for line != "" {
			w, rest, err := parseWarning(line)
			if err != nil {
				break
			}
			out = append(out, w)
			line = rest
		}
	}
	return out
}

var wordDecoder mime.WordDecoder

// errWarning is returned for a malformed warning; it is not reported.
var errWarning = errors.New("client: invalid warning header")

func parseWarning(h string) (w warning, rest string, err error) {
	parts := strings.SplitN(strings.TrimSpace(h), " ", 3)
	if len(parts) != 3 {
		return warning{}, "", errWarning
	}
	code, agent, textAndRest := parts[0], parts[1], parts[2]
	if len(code) != 3 || !isDigits(code) {
		return warning{}, "", errWarning
	}
	w.code, _ = strconv.Atoi(code)
	if agent == "" || !utf8.ValidString(agent) || strings.ContainsFunc(agent, unicode.IsControl) {
		return warning{}, "", errWarning
	}
	text, rest, err := parseQuoted(textAndRest)
	if err != nil {
		return warning{}, "", err
	}
	if decoded, err := wordDecoder.DecodeHeader(text); err == nil {
		text = decoded
	}
	if !utf8.ValidString(text) || strings.ContainsFunc(text, unicode.IsControl) {
		return warning{}, "", errWarning
	}
	w.agent, w.text = agent, text
	if strings.HasPrefix(rest, `"`) { // the warn-date
		end := strings.IndexByte(rest[1:], '"')
		if end < 0 {
			return warning{}, "", errWarning
		}
		rest = strings.TrimSpace(rest[end+2:])
	}
	if rest != "" {
		if rest[0] != ',' {
			return warning{}, "", errWarning
		}
		rest = strings.TrimSpace(rest[1:])
	}
	return w, rest, nil
}

// parseQuoted reads a quoted-string at the start of s: a backslash makes
// the next byte literal. It returns the unquoted text and what follows
// the closing quote, trimmed.
func parseQuoted(s string) (text, rest string, err error) {
	if !strings.HasPrefix(s, `"`) {
		return "", "", errWarning
	}
	var b strings.Builder
	escaping := false
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case escaping:
			b.WriteByte(c)
			escaping = false
		case c == '\\':
			escaping = true
		case c == '"':
			return b.String(), strings.TrimSpace(s[i+1:]), nil
		default:
			b.WriteByte(c)
		}
	}
	return "", "", errWarning
}

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// maxLoggedWarnings bounds the texts the default handler remembers; past
// it the memory starts over, so a text may be logged again.
const maxLoggedWarnings = 1024

// warningHandler delivers the code-299 warnings of every answer the
// Client reads: to Config.WarningHandler, or, by default, to the logger
// once per distinct text.
type warningHandler struct {
	fn  func(text string) // Config.WarningHandler; nil: log
	log *slog.Logger

	mu     sync.Mutex          // guards logged
	logged map[string]struct{} // texts already logged by the default
}

// handle passes on the warnings of one answer's headers. Like client-go's
// handlers, it acts only on code 299 ("miscellaneous persistent warning",
// the only code kube-apiserver sends) with a non-empty text.
func (h *warningHandler) handle(ctx context.Context, hdr http.Header) {
	lines := hdr.Values("Warning")
	if len(lines) == 0 {
		return
	}
	for _, w := range parseWarnings(lines) {
		if w.code != 299 || w.text == "" {
			continue
		}
		if h.fn != nil {
			h.fn(w.text)
			continue
		}
		if h.firstTime(w.text) {
			h.log.WarnContext(ctx, "Warning: "+w.text)
		}
	}
}

func (h *warningHandler) firstTime(text string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.logged[text]; ok {
		return false
	}
	if h.logged == nil || len(h.logged) >= maxLoggedWarnings {
		h.logged = map[string]struct{}{}
	}
	h.logged[text] = struct{}{}
	return true
}
