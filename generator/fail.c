/* mhagen_fail: an error message into the caller's buffer, and -1. */
#include "fail.h"

#include <stdarg.h>
#include <stdio.h>

#include "spec.h"

int mhagen_fail(char *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, MHAGEN_ERR, fmt, ap);
	va_end(ap);
	return -1;
}
