package wire

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestEventLineDecodesAsEvent(t *testing.T) {
	obj := []byte(`{"kind":"ConfigMap","metadata":{"name":"a"}}`)
	line := EventLine(Modified, obj)
	if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 {
		t.Fatalf("not one line: %q", line)
	}
	if cap(line) != len(line) {
		t.Errorf("capacity %d for %d bytes: the size is known up front", cap(line), len(line))
	}
	var ev Event[json.RawMessage]
	if err := json.Unmarshal(line, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != Modified || !bytes.Equal(ev.Object, obj) {
		t.Fatalf("decoded %s %s", ev.Type, ev.Object)
	}
}
