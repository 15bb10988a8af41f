package direct

import (
	"encoding/json"
	"fmt"

	"github.com/listwatch/listwatch/server/storage"
)

// withRevision returns value with metadata.resourceVersion set to rev
// (an object leaving a selector is sent at the revision of that change);
// it refuses values that are not JSON.
func withRevision(value []byte, rev int64) ([]byte, error) {
	if !json.Valid(value) {
		return nil, fmt.Errorf("direct: %w", storage.ErrInvalidValue)
	}
	out, err := storage.SetResourceVersion(value, rev)
	if err != nil {
		return nil, fmt.Errorf("direct: %w", err)
	}
	return out, nil
}
