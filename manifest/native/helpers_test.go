package native_test

import (
	"os"
)

func writeFile(name, data string) error { return os.WriteFile(name, []byte(data), 0o644) }

const dockerfileScratch = "FROM scratch\nCOPY app /app\nENTRYPOINT [\"/app\"]\n"
