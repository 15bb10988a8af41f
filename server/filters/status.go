package filters

import (
	"encoding/json"
	"net/http"

	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// writeStatus answers r with s, with s.Code as the HTTP status, in the
// media type r accepts, as kube's filters answer with
// responsewriters.ErrorNegotiated (request.WriteStatus).
func writeStatus(w http.ResponseWriter, r *http.Request, s *wire.Status) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	request.WriteStatus(w, r, s)
}

// writeJSONStatus answers r with s in JSON whatever r accepts, as kube's
// timeout filter answers its 504.
func writeJSONStatus(w http.ResponseWriter, r *http.Request, s *wire.Status) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(s.Code))
	if request.IsPrettyPrint(r) {
		b, _ := json.MarshalIndent(s, "", "  ")
		_, _ = w.Write(b)
		return
	}
	_ = json.NewEncoder(w).Encode(s)
}

// writeText answers code with msg in plain text, as kube's filters answer
// a 429 of its in-flight limits and the 500 of a panic (http.Error).
func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.Error(w, msg, code)
}
