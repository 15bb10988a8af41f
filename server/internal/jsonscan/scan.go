// Package jsonscan steps over JSON values without decoding them. It
// follows strings and brackets only: callers validate the text first
// (json.Valid) or know it was written by a JSON encoder. On any input the
// functions return an index in range or -1; they never panic.
package jsonscan

import "bytes"

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace (len(b) if there is none).
func SkipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// SkipString returns the index after the string that starts at b[i] (a
// quote), and whether the string has escapes; -1 if it does not end.
func SkipString(b []byte, i int) (end int, escaped bool) {
	i++
	if i > len(b) {
		return -1, false
	}
	j := bytes.IndexByte(b[i:], '"')
	if j < 0 {
		return -1, false
	}
	if bytes.IndexByte(b[i:i+j], '\\') < 0 {
		return i + j + 1, false
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++ // the escaped byte
		case '"':
			return i + 1, true
		}
	}
	return -1, true
}

// SkipValue returns the index after the value that starts at b[i]; -1 if
// there is none or it does not end.
func SkipValue(b []byte, i int) int {
	if i < 0 || i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		i, _ = SkipString(b, i)
		return i
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i, _ = SkipString(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	}
	j := i
	for j < len(b) {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if j == i {
				return -1
			}
			return j
		}
		j++
	}
	return j
}
