#include "files.h"

#include <stdio.h>
#include <stdlib.h>

char *files_read(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long len;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)len + 1))) {
		if (fread(buf, 1, (size_t)len, f) == (size_t)len) {
			buf[len] = '\0';
			if (n)
				*n = (size_t)len;
		} else {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	return buf;
}
