package storage

import "strconv"

// WithResourceVersion returns a copy of value, a JSON object whose
// top-level "metadata" is an object without resourceVersion, with
// metadata.resourceVersion set to rev. It splices bytes instead of decoding,
// so its cost is one copy of the value plus a scan up to "metadata", which
// writers put near the front.
func WithResourceVersion(value []byte, rev int64) ([]byte, error) {
	at, empty, ok := metadataBodyOffset(value)
	if !ok {
		return nil, ErrInvalidValue
	}
	var num [20]byte
	rv := strconv.AppendInt(num[:0], rev, 10)
	out := make([]byte, 0, len(value)+len(rv)+21)
	out = append(out, value[:at]...)
	out = append(out, `"resourceVersion":"`...)
	out = append(out, rv...)
	out = append(out, '"')
	if !empty {
		out = append(out, ',')
	}
	return append(out, value[at:]...), nil
}

// metadataBodyOffset finds the offset just after the '{' that opens the
// top-level "metadata" object, and whether that object is empty.
func metadataBodyOffset(b []byte) (at int, empty, ok bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, false, false
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return 0, false, false
		}
		keyStart := i
		i = skipString(b, i)
		if i < 0 {
			return 0, false, false
		}
		key := b[keyStart:i]
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return 0, false, false
		}
		i = skipSpace(b, i+1)
		if string(key) == `"metadata"` {
			if i >= len(b) || b[i] != '{' {
				return 0, false, false
			}
			j := skipSpace(b, i+1)
			return i + 1, j < len(b) && b[j] == '}', true
		}
		i = skipValue(b, i)
		if i < 0 {
			return 0, false, false
		}
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ',' {
			return 0, false, false
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the offset after the string starting at b[i] == '"',
// or -1.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the offset after the JSON value at b[i], or -1. It
// checks nesting, not full syntax: the value was written by a JSON encoder.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				i--
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return -1
	default:
		for ; i < len(b); i++ {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
		}
		return i
	}
}
