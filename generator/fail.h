/* The one way the generator reports an error: a one-line message into the
 * caller's buffer of MHAGEN_ERR bytes, and -1 to return. */
#ifndef MHAGEN_FAIL_H
#define MHAGEN_FAIL_H

/* Write the printf-style message into err (MHAGEN_ERR bytes, cut short
 * when it does not fit); returns -1. */
int mhagen_fail(char *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
