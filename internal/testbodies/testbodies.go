// Package testbodies builds hostile request and response bodies for the
// tests of both modules (the library's decoders and the server's
// comparisons with client-go's), so the two test the same inputs.
package testbodies

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// caseVariant returns key with the case of some letters flipped (and, at
// random, a 'K' or 's' spelled as the Kelvin sign or long s, which
// encoding/json also folds); it may return key itself.
func caseVariant(r *rand.Rand, key string) string {
	var b strings.Builder
	for _, c := range key {
		switch {
		case c == 'k' && r.IntN(6) == 0:
			b.WriteRune('\u212a')
		case c == 's' && r.IntN(6) == 0:
			b.WriteRune('\u017f')
		case c >= 'a' && c <= 'z' && r.IntN(2) == 0:
			b.WriteRune(c - 'a' + 'A')
		case c >= 'A' && c <= 'Z' && r.IntN(2) == 0:
			b.WriteRune(c - 'A' + 'a')
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

var metaKeyNames = []string{"name", "namespace", "uid", "resourceVersion", "generateName", "deletionTimestamp", "labels", "ownerReferences"}

func metaValue(r *rand.Rand, key string) string {
	switch key {
	case "labels":
		return fmt.Sprintf(`{"l":"v%d"}`, r.IntN(9))
	case "ownerReferences":
		return fmt.Sprintf(`[{"%s":"o%d","%s":"u%d","kind":"K","apiVersion":"v1"}]`,
			caseVariant(r, "name"), r.IntN(9), caseVariant(r, "uid"), r.IntN(9))
	case "deletionTimestamp":
		return fmt.Sprintf(`"2026-01-0%dT00:00:00Z"`, 1+r.IntN(9))
	}
	return fmt.Sprintf(`"%s-%d"`, strings.ToLower(key[:2]), r.IntN(9))
}

// HostilePod is a pod whose metadata holds the real fields plus random
// case variants and duplicates of them, in random order, and sometimes a
// case variant of "metadata" itself.
func HostilePod(seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, seed>>7))
	var members []string
	for _, k := range metaKeyNames {
		for range 1 + r.IntN(3) {
			name := k
			if r.IntN(2) == 0 {
				name = caseVariant(r, k)
			}
			members = append(members, fmt.Sprintf("%q:%s", name, metaValue(r, k)))
		}
	}
	r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	top := []string{`"apiVersion":"v1"`, `"kind":"Pod"`, `"metadata":{` + strings.Join(members, ",") + `}`, `"spec":{"nodeName":"n"}`}
	if r.IntN(3) == 0 {
		top = append(top, fmt.Sprintf(`%q:{"name":"evil","resourceVersion":"1"}`, caseVariant(r, "Metadata")))
	}
	r.Shuffle(len(top), func(i, j int) { top[i], top[j] = top[j], top[i] })
	return []byte("{" + strings.Join(top, ",") + "}")
}
