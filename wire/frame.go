package wire

// EventLine frames one JSON watch event: {"type":typ,"object":obj}
// followed by a newline, the form kube-apiserver streams and Event[T]
// decodes. obj must be one JSON value; typ is written as is (the
// EventType constants need no escaping). This (with AppendEventLine) is
// the one place the framing is written: the server's watch writer and
// the watch cache's shared frames both call it.
func EventLine(typ EventType, obj []byte) []byte {
	return AppendEventLine(make([]byte, 0, EventLineLen(typ, obj)), typ, obj)
}

// eventHead, eventMid and eventTail are the JSON around a watch event's
// type and object.
const eventHead, eventMid, eventTail = `{"type":"`, `","object":`, "}\n"

// EventLineLen is the length of EventLine(typ, obj).
func EventLineLen(typ EventType, obj []byte) int {
	return len(eventHead) + len(typ) + len(eventMid) + len(obj) + len(eventTail)
}

// AppendEventLine appends EventLine(typ, obj) to b.
func AppendEventLine(b []byte, typ EventType, obj []byte) []byte {
	b = append(b, eventHead...)
	b = append(b, typ...)
	b = append(b, eventMid...)
	b = append(b, obj...)
	return append(b, eventTail...)
}
