package wire

// EventLine frames one JSON watch event: {"type":typ,"object":obj}
// followed by a newline, the form kube-apiserver streams and Event[T]
// decodes. obj must be one JSON value; typ is written as is (the
// EventType constants need no escaping). This is the one place
// the framing is written: the server's watch writer and the watch
// cache's shared frames both call it.
func EventLine(typ EventType, obj []byte) []byte {
	const head, mid, tail = `{"type":"`, `","object":`, "}\n"
	b := make([]byte, 0, len(head)+len(typ)+len(mid)+len(obj)+len(tail))
	b = append(b, head...)
	b = append(b, typ...)
	b = append(b, mid...)
	b = append(b, obj...)
	return append(b, tail...)
}
