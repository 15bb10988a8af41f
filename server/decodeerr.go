package server

import (
	"encoding/hex"
	"fmt"
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apiserver/pkg/endpoints/handlers/negotiation"

	"github.com/listwatch/listwatch/wire"
)

// kubeDecodeError is the 400 kube-apiserver gives a JSON body of a
// built-in kind t that does not decode (malformed, or of another kind or
// version): its handler's decoder (the JSON serializer, converting to the
// internal version) decodes the body with the served kind as default, and
// the error becomes the message its transformDecodeError writes. It
// returns nil when kube's decoder takes the body; the caller keeps its own
// error then. sent is the body as sent, which the message shows (a YAML
// body is decoded as the JSON it converts to, as kube's YAML serializer
// does).
func kubeDecodeError(t *typedKind, body, sent []byte) error {
	dec := codecsOf(t.scheme).DecoderToVersion(laxDecoders[t.scheme], t.internal.GroupVersion())
	into, err := t.scheme.New(t.internal)
	if err != nil {
		return nil
	}
	def := t.external
	_, gvk, err := dec.Decode(body, &def, into)
	if err == nil {
		return nil
	}
	return undecodable(gvk, t.internal.Kind, err, sent)
}

// crDecoder reads a custom resource's JSON as kube's handler for custom
// resources does (its errors are what kubeDecodeErrorCR reports).
var crDecoder = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory,
	unstructuredscheme.NewUnstructuredCreator(), unstructuredscheme.NewUnstructuredObjectTyper(), kjson.SerializerOptions{})

// kubeDecodeErrorCR is kubeDecodeError for a custom resource of r,
// decoded strictly (fieldValidation Warn or Strict) or not, as kube's
// serializers do: a body without kind is one kube could not type when
// strict, and quoted as sent (a YAML body as YAML); its lax decoder,
// which reads the JSON into the object, quotes that JSON and names the
// resource's kind and version.
func kubeDecodeErrorCR(r *resource, body, sent []byte, strict bool) error {
	def := schema.GroupVersionKind{Group: r.group, Version: r.version, Kind: r.kind}
	into := &unstructured.Unstructured{}
	into.SetGroupVersionKind(def)
	obj, gvk, err := crDecoder.Decode(body, &def, into)
	if err == nil {
		// Then its metadata, as kube's schema coercion of a write reads
		// it (without dropping malformed fields).
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return nil
		}
		if _, _, _, err = objectmeta.GetObjectMetaWithOptions(u.Object, objectmeta.ObjectMetaOptions{}); err == nil {
			return nil
		}
	}
	switch {
	case runtime.IsMissingKind(err) && strict:
		gvk, err = nil, runtime.NewMissingKindErr(string(sent))
	case runtime.IsMissingVersion(err):
		gvk = nil // a body kube could not type
	}
	return undecodable(gvk, r.kind, err, sent)
}

// undecodable is kube's 400 for a body its decoder refused with err
// (transformDecodeError): naming the kind and version the body gave, if
// any, else showing the start of the body as sent; kind is the kind the
// resource takes.
func undecodable(gvk *schema.GroupVersionKind, kind string, err error, sent []byte) error {
	if gvk != nil && gvk.Kind != "" {
		return wire.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, kind, err))
	}
	return wire.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", kind, err, summarizeBody(sent)))
}

// summarizeBody is how kube's message shows a body it could not read:
// <empty>, its first 30 bytes if it starts as a JSON object, else their
// hex.
func summarizeBody(b []byte) string {
	const max = 30
	more := ""
	if len(b) > max {
		b, more = b[:max], " ..."
	}
	switch {
	case len(b) == 0:
		return "<empty>"
	case b[0] == '{':
		return string(b) + more
	default:
		return hex.EncodeToString(b) + more
	}
}

var codecFactories sync.Map // *runtime.Scheme → serializer.CodecFactory

func codecsOf(s *runtime.Scheme) serializer.CodecFactory {
	if cf, ok := codecFactories.Load(s); ok {
		return cf.(serializer.CodecFactory)
	}
	cf, _ := codecFactories.LoadOrStore(s, serializer.NewCodecFactory(s))
	return cf.(serializer.CodecFactory)
}

// contentYAML is the media type of YAML bodies, which kube reads for
// creates and updates as it reads JSON.
const contentYAML = "application/yaml"

// unsupportedBody is kube's 415 for a create or update body in a format
// it does not read. (Its list names protobuf for custom resources too,
// whose protobuf bodies serve refuses with it; kube-apiserver v1.37.2
// drops the connection.)
func unsupportedBody() error {
	return kubeStatus(negotiation.NewUnsupportedMediaTypeError([]string{"application/json", contentYAML, contentProtobuf}))
}
