package request

import (
	"net/http"
	"strconv"
	"strings"
)

// IsPrettyPrint reports whether kube-apiserver would indent its JSON
// answer to r: as its negotiation decides, by the pretty parameter if it
// has a value, else for curl, Wget and browsers.
func IsPrettyPrint(r *http.Request) bool {
	if strings.Contains(r.URL.RawQuery, "pretty") {
		if v := r.URL.Query().Get("pretty"); v != "" {
			p, _ := strconv.ParseBool(v)
			return p
		}
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}
