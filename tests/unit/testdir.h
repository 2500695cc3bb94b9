/*
 * testdir.h - a private temporary directory for a cmocka suite: testdir_setup() makes it from a
 * mkdtemp() template (the suite's static char array, "/tmp/NAME-XXXXXX") with TMPDIR unset, so
 * that code under test which honours TMPDIR uses the system's; testdir_teardown() removes it
 * with everything in it (symlinks not followed). Header-only; include it after cmocka.h.
 */
#ifndef LANDLORD_TESTS_TESTDIR_H
#define LANDLORD_TESTS_TESTDIR_H

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static inline int testdir_setup(char *template_)
{
	unsetenv("TMPDIR");
	return mkdtemp(template_) != NULL ? 0 : -1;
}

static inline int testdir__remove(const char *path, const struct stat *st, int flag,
                                  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static inline int testdir_teardown(const char *dir)
{
	return nftw(dir, testdir__remove, 16, FTW_DEPTH | FTW_PHYS);
}

#endif
