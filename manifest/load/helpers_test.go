package load_test

const dockerfileScratch = "FROM scratch\nCOPY app /app\nENTRYPOINT [\"/app\"]\n"
