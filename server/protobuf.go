package server

import (
	"encoding/json"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"

	"github.com/listwatch/listwatch/wire"
)

// contentProtobuf is the body type kubectl and client-go's typed clients
// send for built-in kinds. listwatch stores JSON, so such a body is
// decoded into the k8s.io/api type and re-encoded as JSON before anything
// else sees it. Responses are protobuf when the client asks (proto.go).
const contentProtobuf = "application/vnd.kubernetes.protobuf"

// protobufScheme knows the built-in kinds served here.
var protobufScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := coordinationv1.AddToScheme(s); err != nil {
		panic(err)
	}
	// CustomResourceDefinitions are served in protobuf too, as kube's
	// apiextensions server does (its clientset asks for it); custom
	// resources are not.
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// protobufCodec decodes protobuf request bodies of those kinds.
var protobufCodec = protobuf.NewSerializer(protobufScheme, protobufScheme)

// protobufToJSON converts a protobuf-encoded built-in object to JSON.
func protobufToJSON(b []byte) ([]byte, error) {
	obj, _, err := protobufCodec.Decode(b, nil, nil)
	if err != nil {
		return nil, wire.NewBadRequest(fmt.Sprintf("unable to decode protobuf body: %v", err))
	}
	return json.Marshal(obj)
}
