package filters

import (
	"encoding/json"
	"net/http"

	"github.com/listwatch/listwatch/server/request"
	"github.com/listwatch/listwatch/wire"
)

// writeStatus answers r with s as JSON, with s.Code as the HTTP status,
// indented when kube would indent it (request.IsPrettyPrint).
func writeStatus(w http.ResponseWriter, r *http.Request, s *wire.Status) {
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
