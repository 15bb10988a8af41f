package server

import "testing"

// BenchmarkDocEncode is doc.encode, the stored form of every write, of
// a ConfigMap, a Pod and a Deployment as a create stores them.
func BenchmarkDocEncode(b *testing.B) {
	for _, k := range writeBenchKinds[:3] {
		b.Run(k.name, func(b *testing.B) {
			d, err := decodeDoc([]byte(k.object("w", 1)))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = d.encode()
			}
		})
	}
}
