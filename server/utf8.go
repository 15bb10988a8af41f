package server

import (
	"bytes"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// validUTF8 returns JSON text b with every string made valid Unicode the
// way decoding it into Go strings would (as kube-apiserver's decoder
// does): each byte of invalid UTF-8 becomes U+FFFD, and so does each \u
// escape of a surrogate that is not half of a valid pair. Bytes outside
// strings are left alone; the decoder refuses them. b is returned as is
// when there is nothing to replace, which is the usual case.
//
// Stored fields are kept raw (see doc), so without this a body's invalid
// bytes would be served back in every GET, LIST and WATCH, which strict
// JSON parsers refuse.
func validUTF8(b []byte) []byte {
	// A surrogate's escape starts \ud or \uD.
	if utf8.Valid(b) && !bytes.Contains(b, []byte(`\ud`)) && !bytes.Contains(b, []byte(`\uD`)) {
		return b
	}
	out := make([]byte, 0, len(b)+8)
	inString := false
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case !inString:
			inString = c == '"'
			out = append(out, c)
			i++
		case c == '"':
			inString = false
			out = append(out, c)
			i++
		case c == '\\':
			if r, ok := hex4(b, i); ok && utf16.IsSurrogate(r) {
				if r2, ok := hex4(b, i+6); ok && utf16.DecodeRune(r, r2) != unicode.ReplacementChar {
					out = append(out, b[i:i+12]...)
					i += 12
					continue
				}
				out = append(out, `\ufffd`...)
				i += 6
				continue
			}
			end := min(i+2, len(b)) // the escape's two bytes, kept whatever they are
			out = append(out, b[i:end]...)
			i = end
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				out = utf8.AppendRune(out, utf8.RuneError)
			} else {
				out = append(out, b[i:i+size]...)
			}
			i += size
		}
	}
	return out
}

// hex4 decodes the \uXXXX escape at b[i:], if there is one.
func hex4(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[i+2 : i+6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	return r, true
}
