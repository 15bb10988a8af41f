package direct

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// withRevision returns value with metadata.resourceVersion set to rev.
// Unlike storage.WithResourceVersion it accepts a value that has one
// already. It re-encodes the object, so it is for rare events only (an
// object leaving a selector); key order becomes sorted, values keep
// their meaning.
func withRevision(value []byte, rev int64) ([]byte, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(value, &obj); err != nil {
		return nil, fmt.Errorf("direct: %w", err)
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(obj["metadata"], &meta); err != nil || meta == nil {
		return nil, fmt.Errorf("direct: object without metadata: %w", err)
	}
	meta["resourceVersion"] = json.RawMessage(strconv.Quote(strconv.FormatInt(rev, 10)))
	m, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("direct: %w", err)
	}
	obj["metadata"] = m
	return json.Marshal(obj)
}
