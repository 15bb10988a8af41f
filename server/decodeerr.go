package server

import (
	"encoding/hex"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/listwatch/listwatch/wire"
)

// kubeDecodeError is the 400 kube-apiserver gives a JSON body of a
// built-in kind t that does not decode (malformed, or of another kind or
// version): its handler's decoder (the JSON serializer, converting to the
// internal version) decodes the body with the served kind as default, and
// the error becomes the message its transformDecodeError writes. It
// returns nil when kube's decoder takes the body; the caller keeps its own
// error then.
func kubeDecodeError(t *typedKind, body []byte) error {
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
	if gvk != nil && gvk.Kind != "" {
		return wire.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", gvk.Kind, gvk.Version, t.internal.Kind, err))
	}
	return wire.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", t.internal.Kind, err, summarizeBody(body)))
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
