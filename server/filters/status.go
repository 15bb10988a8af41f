package filters

import (
	"encoding/json"
	"net/http"

	"github.com/listwatch/listwatch/wire"
)

// writeStatus answers with s as JSON, with s.Code as the HTTP status.
func writeStatus(w http.ResponseWriter, s *wire.Status) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(int(s.Code))
	_ = json.NewEncoder(w).Encode(s)
}
