package patch

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func deeplyNested(levels int) []byte {
	return []byte(`{"a":` + strings.Repeat(`{"a":`, levels) + `1` + strings.Repeat(`}`, levels+1))
}

func TestDeepNestingRefusedQuickly(t *testing.T) {
	deep := deeplyNested(10000)
	deepArray := []byte(`[{"op":"add","path":"/a","value":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}]`)
	pod, _ := SchemaFor("", "Pod")
	tests := []struct {
		name string
		run  func() error
		want error
	}{
		{"merge patch", func() error { _, err := MergePatch([]byte(`{}`), deep); return err }, ErrInvalidPatch},
		{"merge doc", func() error { _, err := MergePatch(deep, []byte(`{}`)); return err }, ErrInvalidDocument},
		{"json patch value", func() error { _, err := JSONPatch([]byte(`{}`), deepArray); return err }, ErrInvalidPatch},
		{"strategic patch", func() error { _, err := StrategicMergePatch([]byte(`{}`), deep, pod); return err }, ErrInvalidPatch},
	}
	for _, tt := range tests {
		start := time.Now()
		err := tt.run()
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: error = %v, want %v", tt.name, err, tt.want)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s took %v", tt.name, d)
		}
	}
}

func TestNestingAtLimitAccepted(t *testing.T) {
	// MaxDepth levels in total, counting the outer object.
	ok := deeplyNested(MaxDepth - 2)
	if _, err := MergePatch([]byte(`{}`), ok); err != nil {
		t.Fatalf("nesting at the limit refused: %v", err)
	}
}

func TestHugeJSONPatchRefusedQuickly(t *testing.T) {
	op := `{"op":"add","path":"/a","value":1},`
	p := []byte("[" + strings.Repeat(op, 200_000) + `{"op":"add","path":"/a","value":1}]`)
	start := time.Now()
	_, err := JSONPatch([]byte(`{}`), p)
	if !errors.Is(err, ErrTooManyOperations) {
		t.Fatalf("error = %v, want ErrTooManyOperations", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("refusing took %v", d)
	}
}

func TestStringsWithBracketsDoNotCountAsNesting(t *testing.T) {
	s := `{"a":"` + strings.Repeat(`[{\"`, 5000) + `"}`
	if _, err := MergePatch([]byte(`{}`), []byte(s)); err != nil {
		t.Fatalf("brackets inside a string were counted: %v", err)
	}
}
