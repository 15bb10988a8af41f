package request

import (
	"encoding/json"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"

	"github.com/listwatch/listwatch/wire"
)

// WriteStatus answers r with st, in the media type r accepts (JSON, YAML
// or protobuf; indented as kube indents), as kube's filters and its
// handler of unknown paths answer with responsewriters.ErrorNegotiated:
// a client accepting none of them still gets st, in indented JSON, and
// a Retry-After header when st asks for one.
func WriteStatus(w http.ResponseWriter, r *http.Request, st *wire.Status) {
	var gv schema.GroupVersion
	if info, ok := InfoFrom(r.Context()); ok {
		gv = schema.GroupVersion{Group: info.APIGroup, Version: info.APIVersion}
	}
	responsewriters.ErrorNegotiated(&apierrors.StatusError{ErrStatus: metaStatus(st)}, StatusCodecs, gv, w, r)
}

// metaStatus is st as metav1's Status, which has the same JSON.
func metaStatus(st *wire.Status) metav1.Status {
	var ms metav1.Status
	b, err := json.Marshal(st)
	if err == nil {
		err = json.Unmarshal(b, &ms)
	}
	if err != nil {
		// Not reachable with wire's types; never an answer of the wrong code.
		ms = metav1.Status{Status: metav1.StatusFailure, Code: st.Code, Reason: metav1.StatusReason(st.Reason), Message: st.Message}
	}
	return ms
}

// StatusCodecs encode a Status as kube-apiserver's codecs do (metav1's
// Status in v1).
var StatusCodecs = func() runtime.NegotiatedSerializer {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	return serializer.NewCodecFactory(s)
}()
