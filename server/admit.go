package server

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	sigsjson "sigs.k8s.io/json"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/wire"
)

// readBody reads a request body up to the server's limit.
func (c *call) readBody() ([]byte, error) {
	// A body of known length is read into a buffer of its size (one byte
	// more, to see the end) instead of one io.ReadAll grows from 512 bytes;
	// up to 64 KiB, so that a client that declares a large body and sends
	// nothing does not hold that much memory.
	size := 512
	if n := c.r.ContentLength; n > 0 && n <= c.s.maxBody {
		size = int(min(n+1, 64<<10))
	}
	b, err := readAll(http.MaxBytesReader(c.w, c.r.Body, c.s.maxBody), size)
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, wire.NewRequestEntityTooLarge(c.s.maxBody)
		}
		return nil, wire.NewBadRequest("unable to read request body: " + err.Error())
	}
	return b, nil
}

// readAll is io.ReadAll starting with a buffer of size bytes.
func readAll(r io.Reader, size int) ([]byte, error) {
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// decodeBody reads and decodes a create or update body, checking what
// the URL decides: its apiVersion and kind (filled in when empty) and its
// namespace.
func (c *call) decodeBody() (*doc, error) {
	ct := c.r.Header.Get("Content-Type")
	typ, _ := parseMediaRange(ct)
	// Built-in kinds are read from protobuf too; custom resources not.
	builtin := c.res.crd == ""
	t := c.res.typed() // nil for custom resources and untyped built-ins
	if !isJSONContent(ct) && typ != contentYAML && (typ != contentProtobuf || !builtin) {
		return nil, unsupportedBody()
	}
	b, err := c.readBody()
	if err != nil {
		return nil, err
	}
	sent := b
	if typ == contentYAML {
		// As kube's YAML serializer: the body as JSON, then as a JSON one.
		j, err := sigsyaml.YAMLToJSON(b)
		if err != nil {
			return nil, undecodable(nil, c.res.kind, err, b)
		}
		b = j
	}
	var fromProto runtime.Object // the object a protobuf body decoded to
	if typ == contentProtobuf {
		if fromProto, b, err = decodeProtobuf(b); err != nil {
			return nil, err
		}
	}
	c.tr.Step("About to convert to expected version")
	if err := checkDepth(b); err != nil {
		return nil, err
	}
	if fromProto == nil && t != nil && string(bytes.TrimSpace(b)) == "null" {
		// kube's JSON decoder reads null into an empty object.
		b = []byte("{}")
	}
	d, err := decodeDoc(b)
	repeated := err == nil && d.repeated
	if repeated { // a key repeated (repeated.go)
		d, err = decodeRepeated(b, t != nil)
	}
	if err == nil && !builtin && fromProto == nil && (d.kind == "" || d.apiVersion == "") {
		// kube reads a custom resource's kind and apiVersion from the
		// body; it fills in only a built-in kind's.
		err = kubeDecodeErrorCR(c.res, b, sent, c.fieldValidation() != fieldValidationIgnore)
	}
	// A custom resource of another version of its group (or another
	// group) is refused by kube's handler once its decoder has decoded
	// it, strictly, by the schema of the version it names: the strict
	// errors come first (a 400 under Strict, warnings under Warn).
	var otherVersion error
	if err == nil {
		err = c.checkType(d)
		if err != nil && !builtin && fromProto == nil && d.apiVersion == "" {
			if serr := c.strictWithoutAPIVersion(typ == contentYAML, b, sent); serr != nil {
				err = serr
			}
		} else if err != nil && c.res.schema != nil && !c.scale && fromProto == nil && d.apiVersion != c.res.apiVersion() {
			// (A body the decoder cannot read, its metadata say, is
			// that error alone.)
			otherVersion, err = err, kubeDecodeErrorCR(c.res, b, sent, c.fieldValidation() != fieldValidationIgnore)
		}
	}
	if err == nil && fromProto == nil && c.fieldValidation() != fieldValidationIgnore {
		err = c.strictBody(d, t, typ == contentYAML, b, sent)
	} else if err == nil && fromProto == nil && repeated && t != nil && !c.scale {
		// kube's decoder reads each occurrence of a repeated key: a
		// value it cannot decode fails the body, though a later one
		// replaces it.
		err = decodeFault(t, d, b)
	}
	if err != nil {
		// The message kube's decoder gives the same body.
		var kerr error
		switch {
		case fromProto != nil || c.scale:
		case t != nil:
			kerr = kubeDecodeError(t, b, sent)
		case !builtin:
			kerr = kubeDecodeErrorCR(c.res, b, sent, c.fieldValidation() != fieldValidationIgnore)
		}
		if kerr != nil {
			return nil, kerr
		}
		return nil, err
	}
	if c.res.schema != nil && !c.scale {
		if err := c.schemaUnknownFields(d, b); err != nil { // crschema.go
			return nil, err
		}
	}
	if err := c.checkDecoded(d); err != nil {
		return nil, err
	}
	if otherVersion != nil {
		return nil, otherVersion
	}
	if fromProto == nil && (t != nil || !builtin) {
		c.body, c.sent = b, sent
	}
	if fromProto != nil && !d.repeated {
		d.rememberBody(t, fromProto, b) // bodyview.go
	}
	return d, nil
}

// strictBody completes d.strict, the fields decoding a body dropped, as
// kube's strict decoder lists them. A YAML body's repeated keys come
// first: the JSON it converts to keeps the last of each, and kube converts
// the YAML again, strictly, to find them. A built-in kind's are then one
// list in the order kube's decoder meets them, metadata's and the rest's
// alike (those of d's metadata alone are known so far; the rest are found
// when d is decoded into its type, decodeTyped): when there are any, the
// body, b as JSON, is decoded strictly into its type here. A fault kube's
// decoder stops at (a value of the wrong type; a custom resource's
// metadata that is not an ObjectMeta) is what it reports instead, without
// them: strictBody returns it, for decodeBody to word as kube does.
func (c *call) strictBody(d *doc, t *typedKind, yaml bool, b, sent []byte) error {
	var first strictErrors
	if yaml {
		if _, err := sigsyaml.YAMLToJSONStrict(sent); err != nil {
			first = strictErrors{err.Error()}
		}
	}
	if len(first) == 0 && len(d.strict) == 0 {
		return nil
	}
	switch {
	case c.scale:
	case t != nil:
		into, err := t.scheme.New(t.external)
		if err != nil {
			return wire.NewInternalError(err)
		}
		_, err = decodeJSONInto(t, d, b, into, true)
		strictErr, ok := runtime.AsStrictDecodingError(err)
		switch {
		case ok:
			d.strict = d.strict[:0]
			for _, e := range strictErr.Errors() {
				d.strict = append(d.strict, e.Error())
			}
		case err == nil:
			d.strict = d.strict[:0]
		default:
			return err
		}
	case c.res.crd != "":
		if err := kubeDecodeErrorCR(c.res, b, sent, c.fieldValidation() != fieldValidationIgnore); err != nil {
			return err
		}
	}
	d.strict = append(first, d.strict...)
	return nil
}

// strictWithoutAPIVersion applies fieldValidation to what kube's strict
// decoder finds in a custom resource's body without apiVersion, which its
// handler refuses only once decoded: the YAML's repeated keys and the
// JSON's duplicate fields (nothing is pruned: kube's schema is for its
// group alone). Strict: kube's 400 for an object it cannot type; Warn:
// the warnings, the caller's error then.
func (c *call) strictWithoutAPIVersion(yaml bool, b, sent []byte) error {
	if c.fieldValidation() == fieldValidationIgnore {
		return nil
	}
	var errs strictErrors
	if yaml {
		if _, err := sigsyaml.YAMLToJSONStrict(sent); err != nil {
			errs = append(errs, err.Error())
		}
	}
	dups, err := sigsjson.UnmarshalStrict(b, &map[string]any{})
	if err != nil {
		return nil // not reached: b decoded
	}
	for _, e := range dups {
		errs = append(errs, e.Error())
	}
	switch {
	case len(errs) == 0:
	case c.fieldValidation() == fieldValidationStrict:
		return wire.NewBadRequest(runtime.NewMissingVersionErr("object has no apiVersion field").Error())
	default:
		c.warnStrict(errs)
	}
	return nil
}

// decodeFault is the error kube's lax decoder gives b, the JSON body d
// was decoded from, for a built-in kind t; nil if it decodes.
func decodeFault(t *typedKind, d *doc, b []byte) error {
	into, err := t.scheme.New(t.external)
	if err != nil {
		return wire.NewInternalError(err)
	}
	_, err = decodeJSONInto(t, d, b, into, false)
	return err
}

// checkType enforces that d is of the URL's kind and apiVersion, and in
// its namespace, as kube's decoding and BeforeCreate/BeforeUpdate do.
func (c *call) checkType(d *doc) error {
	r := c.res
	if d.apiVersion == "" && r.crd == "" {
		// kube's decoder fills in a built-in kind's; a custom
		// resource's is read from the body.
		d.apiVersion = r.apiVersion()
	}
	if d.kind == "" {
		d.kind = r.kind
	}
	// A custom resource of another kind decodes (kube's unstructured
	// decoder takes any kind); kube's custom resource validator, which
	// runs with a version's schema (validateSchema), then refuses it,
	// with its other errors (422 "kind: … must be …"). A version without
	// a schema is refused here, so that no other kind is stored.
	if d.kind != r.kind && (r.crd == "" || r.schema == nil) {
		return wire.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: the object's kind does not match the request's resource", d.kind, r.version, r.kind))
	}
	// A patch is not checked so (kube's handler checks a create's and an
	// update's body): one that removed a custom resource's apiVersion is
	// refused once its store reads the object (admit, missingAPIVersion),
	// one that changed it by the custom resource validator, with its other
	// errors (422 "apiVersion: … must be …"), as another kind above.
	patched := r.crd != "" && c.r.Method == http.MethodPatch && (d.apiVersion == "" || r.schema != nil)
	if d.apiVersion != r.apiVersion() && !patched {
		return wire.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", d.apiVersion, r.apiVersion()))
	}
	ns := d.metaString("namespace")
	switch {
	case !r.namespaced:
		delete(d.meta, "namespace")
	case ns == "", c.ns == "":
		// kube's EnsureObjectNamespaceMatchesRequestNamespace: a
		// request without a namespace (a path with an empty namespace
		// segment) clears the object's, which validation then requires.
		d.setMeta("namespace", c.ns)
	case ns != c.ns:
		return wire.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// validateMeta checks that a custom resource's metadata decodes as an
// ObjectMeta, with the message kube's decoding of the body gives when it
// does not; the rules for its fields are kube's validation's, which
// admitCustom runs (validateCustomMeta, validateSchema).
func (c *call) validateMeta(d *doc) error {
	if _, err := d.objectMeta(); err != nil {
		if c.body != nil && c.res.crd != "" {
			if kerr := kubeDecodeErrorCR(c.res, c.body, c.sent, c.fieldValidation() != fieldValidationIgnore); kerr != nil {
				return kerr
			}
		}
		return err
	}
	return nil
}

// prepareCreate sets what the server owns on a new custom resource d,
// after mutating admission, as kube's store does before BeforeCreate: name
// from generateName, uid, creationTimestamp, and no resourceVersion. The
// generation is the strategy's to set (admitCustom); prepareCreateMeta is
// the same for a built-in kind's typed object.
func (c *call) prepareCreate(d *doc) {
	if d.metaString("name") == "" {
		if gen := d.metaString("generateName"); gen != "" {
			d.setMeta("name", c.s.genName(gen))
		}
	}
	d.setMeta("uid", newUID())
	d.setMeta("creationTimestamp", c.s.now().UTC().Format(time.RFC3339))
	delete(d.meta, "resourceVersion")
	delete(d.meta, "deletionTimestamp")
	delete(d.meta, "deletionGracePeriodSeconds")
	delete(d.meta, "selfLink")
}

// prepareCreateMeta is prepareCreate for m, the metadata of a built-in
// kind's new object. The generation is its strategy's to set; a kind whose
// strategy leaves it, as ConfigMap's, keeps the client's, as in kube.
func (c *call) prepareCreateMeta(m metav1.Object) {
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(c.s.genName(m.GetGenerateName()))
	}
	m.SetUID(types.UID(newUID()))
	m.SetCreationTimestamp(metav1.NewTime(c.s.now().UTC().Truncate(time.Second)))
	m.SetResourceVersion("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
}

// prepareUpdate carries the server-owned fields of old into d, a custom
// resource's update, and checks that the immutable ones were not changed,
// as kube's BeforeUpdate does (a built-in kind's is BeforeUpdate itself,
// in admitTyped).
func (c *call) prepareUpdate(d, old *doc) error {
	if c.res.converted {
		old = c.res.servedDoc(old) // convert.go: d is in the served version
	}
	if c.status {
		// Only .status changes; the rest, metadata included, is the
		// stored one (kube's status strategy for custom resources).
		st, has := d.rest["status"]
		mf, hasMF := d.meta["managedFields"]
		d.meta, d.rest = cloneRaw(old.meta), cloneRaw(old.rest)
		if c.res.crd != "" && old.kind != "" {
			// kube's status strategy copies the whole stored object, as
			// the request's version reads it, its kind and apiVersion
			// too: a body of another kind or version is not refused.
			d.kind = old.kind
			d.apiVersion = c.res.apiVersion()
		}
		if hasMF { // computed for this write (ssa.go), kept as kube's strategy keeps them
			d.meta["managedFields"] = mf
		}
		if has {
			d.rest["status"] = st
		} else {
			delete(d.rest, "status")
		}
		return nil
	}
	// (deletionTimestamp and its grace period: checkDeletionUpdate.)
	for _, k := range []string{"creationTimestamp", "generation"} {
		if v, ok := old.meta[k]; ok {
			d.meta[k] = v
		} else {
			delete(d.meta, k)
		}
	}
	oldUID := old.metaString("uid")
	switch uid := d.metaString("uid"); {
	case uid == "":
		d.setMeta("uid", oldUID)
	case uid != oldUID && c.res.schema == nil:
		return invalid(c.res.qualifiedKind(), c.res.group, c.res.kind, c.name,
			fieldInvalid("metadata.uid", uid, "field is immutable"))
	}
	// With a schema, a changed uid is left to validateSchema, which runs
	// kube's BeforeUpdate validation: the metadata rules common to every
	// kind, then the strategy's, so kube reports it twice, among the
	// object's other faults.
	return nil
}

// generateName appends five random characters from kube's alphabet (no
// vowels, no confusable digits) to base.
func generateName(base string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	const maxBase = 63 - 5
	if len(base) > maxBase {
		base = base[:maxBase]
	}
	var b [5]byte
	for i := range b {
		b[i] = alphabet[mrand.IntN(len(alphabet))] // uniform, as kube's
	}
	return base + string(b[:])
}

// newUID returns a random (version 4) UUID.
func newUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

func cloneRaw(m map[string]json.RawMessage) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
