package policy

// Names the external tests of this package use.

const BytesPerNode = bytesPerNode

const MaxSwarmConfigBytes = maxSwarmConfigBytes

const MaxSwarmObjectName = maxSwarmObjectName
