
// BenchmarkReadStoredObject is the cost of kube's storage decoding of one
// stored custom resource with gadgetSchema, the first time it is read
// ("decode") and when it is remembered as needing nothing ("cached").
func BenchmarkReadStoredObject(b *testing.B) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(benchGadgetCRD(b, gadgetSchema), crd); err != nil {
		b.Fatal(err)
	}
	cs, err := newCRSchema(crd, "v1", "Gadget", true, false, nil)
	if err != nil {
		b.Fatal(err)
	}
	d, err := decodeDoc([]byte(gadget("g", benchGadgetSpec)))
	if err != nil {
		b.Fatal(err)
	}
	u, _ := toUnstructured(d)
	_, _ = cs.coerce(u.Object)
	stored, _ := u.MarshalJSON()
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cs.unchanged = readCache{}
			_ = cs.readStored(stored)
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = cs.readStored(stored)
		}
	})
}
