// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Unit tests: how "fastlocal run" judges a command (tools/exe_elf.c,
 * tools/exe_check.c) on hand-made ELF files and made-up file modes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../../tools/exe_elf.c"
#include "../../tools/exe_check.c"

/* A minimal ELF64 executable: header, program headers of the given types,
 * and (for PT_NOTE) one note with the given name and type. */
struct fl_mini_elf {
	Elf64_Ehdr eh;
	Elf64_Phdr ph[2];
	Elf64_Nhdr nh;
	char name[4];
	char desc[4];
};

static int fl_mini_elf_fd(uint16_t e_type, const uint32_t *ptypes, int nph,
			  const char *note_name, uint32_t namesz, uint32_t note_type)
{
	struct fl_mini_elf f;
	int fd = memfd_create("mini-elf", 0), i;

	memset(&f, 0, sizeof(f));
	memcpy(f.eh.e_ident, ELFMAG, SELFMAG);
	f.eh.e_ident[EI_CLASS] = ELFCLASS64;
	f.eh.e_ident[EI_DATA] = ELFDATA2LSB;
	f.eh.e_ident[EI_VERSION] = EV_CURRENT;
	f.eh.e_type = e_type;
	f.eh.e_machine = EM_X86_64;
	f.eh.e_version = EV_CURRENT;
	f.eh.e_phoff = offsetof(struct fl_mini_elf, ph);
	f.eh.e_ehsize = sizeof(Elf64_Ehdr);
	f.eh.e_phentsize = sizeof(Elf64_Phdr);
	f.eh.e_phnum = (uint16_t)nph;
	for (i = 0; i < nph; i++) {
		f.ph[i].p_type = ptypes[i];
		if (ptypes[i] == PT_NOTE) {
			f.ph[i].p_offset = offsetof(struct fl_mini_elf, nh);
			f.ph[i].p_filesz = sizeof(f.nh) + sizeof(f.name) + sizeof(f.desc);
		}
	}
	f.nh.n_namesz = namesz;
	f.nh.n_descsz = sizeof(f.desc);
	f.nh.n_type = note_type;
	memcpy(f.name, note_name, strlen(note_name) + 1);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, &f, sizeof(f)), sizeof(f));
	return fd;
}

static enum fl_elf_kind fl_mini_elf_kind(uint16_t e_type, const uint32_t *ptypes, int nph,
					 const char *note_name, uint32_t namesz, uint32_t note_type)
{
	int fd = fl_mini_elf_fd(e_type, ptypes, nph, note_name, namesz, note_type);
	enum fl_elf_kind k = fl_elf_inspect(fd);

	close(fd);
	return k;
}

static void elf_without_interp_is_static(void **state)
{
	const uint32_t load[] = { PT_LOAD };

	(void)state;
	assert_int_equal(fl_mini_elf_kind(ET_EXEC, load, 1, "", 1, 0), FL_ELF_STATIC);
	/* static-pie: ET_DYN and still no interpreter */
	assert_int_equal(fl_mini_elf_kind(ET_DYN, load, 1, "", 1, 0), FL_ELF_STATIC);
}

static void elf_with_interp_is_dynamic(void **state)
{
	const uint32_t interp[] = { PT_INTERP, PT_LOAD };
	int fd = open("/proc/self/exe", O_RDONLY);

	(void)state;
	assert_int_equal(fl_mini_elf_kind(ET_DYN, interp, 2, "", 1, 0), FL_ELF_DYNAMIC);
	/* this very test program is an ordinary dynamic executable */
	assert_true(fd >= 0);
	assert_int_equal(fl_elf_inspect(fd), FL_ELF_DYNAMIC);
	close(fd);
}

static void go_build_id_note_is_go(void **state)
{
	const uint32_t note[] = { PT_INTERP, PT_NOTE };

	(void)state;
	/* as cmd/link writes it ("Go\0\0", namesz 4), even dynamically
	 * linked: Go's net package bypasses libc */
	assert_int_equal(fl_mini_elf_kind(ET_EXEC, note, 2, "Go", 4, 4), FL_ELF_GO);
	assert_int_equal(fl_mini_elf_kind(ET_EXEC, note, 2, "Go", 3, 4), FL_ELF_GO);
	/* a GNU build-id note (type 3), another Go note type, or another
	 * name that starts with "Go" is not it */
	assert_int_equal(fl_mini_elf_kind(ET_EXEC, note, 2, "GNU", 4, 3), FL_ELF_DYNAMIC);
	assert_int_equal(fl_mini_elf_kind(ET_EXEC, note, 2, "Go", 4, 3), FL_ELF_DYNAMIC);
	assert_int_equal(fl_mini_elf_kind(ET_EXEC, note, 2, "Gox", 4, 4), FL_ELF_DYNAMIC);
}

static void non_programs_get_no_opinion(void **state)
{
	const uint32_t load[] = { PT_LOAD };
	int fd = memfd_create("text", 0);

	(void)state;
	assert_int_equal(fl_mini_elf_kind(ET_REL, load, 1, "", 1, 0), FL_ELF_NOT_ELF);
	assert_int_equal(fl_mini_elf_kind(ET_CORE, load, 1, "", 1, 0), FL_ELF_NOT_ELF);
	assert_int_equal(fl_elf_inspect(fd), FL_ELF_NOT_ELF); /* empty */
	assert_int_equal(write(fd, "#!/bin/sh\necho hi\n", 18), 18);
	assert_int_equal(fl_elf_inspect(fd), FL_ELF_NOT_ELF);
	close(fd);
	assert_int_equal(fl_elf_inspect(-1), FL_ELF_NOT_ELF);
}

static void secure_mode_follows_the_kernel(void **state)
{
	struct stat st = { .st_uid = 65534, .st_gid = 65534, .st_mode = S_IFREG | 0755 };

	(void)state;
	assert_int_equal(fl_exe_secure_mode(&st, 0, 0, false, false), FL_EXE_PRELOADABLE);
	st.st_mode |= S_ISUID;
	assert_int_equal(fl_exe_secure_mode(&st, 0, 0, false, false), FL_EXE_SETUID);
	/* the owner running its own setuid program stays itself */
	assert_int_equal(fl_exe_secure_mode(&st, 65534, 0, false, false), FL_EXE_PRELOADABLE);
	/* nosuid mount or no_new_privs: the bit is not honoured */
	assert_int_equal(fl_exe_secure_mode(&st, 0, 0, true, true), FL_EXE_PRELOADABLE);
	st.st_mode = S_IFREG | S_ISGID | 0755;
	assert_int_equal(fl_exe_secure_mode(&st, 0, 0, false, false), FL_EXE_SETGID);
	assert_int_equal(fl_exe_secure_mode(&st, 0, 65534, false, false), FL_EXE_PRELOADABLE);
	/* set-gid without group execute is the old mandatory-locking mark */
	st.st_mode = S_IFREG | S_ISGID | 0745;
	assert_int_equal(fl_exe_secure_mode(&st, 0, 0, false, false), FL_EXE_PRELOADABLE);
	st.st_mode = S_IFREG | 0755;
	assert_int_equal(fl_exe_secure_mode(&st, 1000, 1000, false, true), FL_EXE_FILECAPS);
	assert_int_equal(fl_exe_secure_mode(&st, 0, 0, false, true), FL_EXE_PRELOADABLE);
}

static void shebang_names_the_interpreter(void **state)
{
	char out[64];
	const char *s;

	(void)state;
	s = "#!/bin/sh\n";
	assert_int_equal(fl_shebang_interp(s, strlen(s), out, sizeof(out)), 0);
	assert_string_equal(out, "/bin/sh");
	s = "#! \t/usr/bin/env python3 -u\n";
	assert_int_equal(fl_shebang_interp(s, strlen(s), out, sizeof(out)), 0);
	assert_string_equal(out, "/usr/bin/env");
	s = "#!/x"; /* no newline within the kernel's buffer */
	assert_int_equal(fl_shebang_interp(s, strlen(s), out, sizeof(out)), 0);
	assert_string_equal(out, "/x");
	s = "#!\n";
	assert_int_equal(fl_shebang_interp(s, strlen(s), out, sizeof(out)), -1);
	s = "\x7f" "ELF";
	assert_int_equal(fl_shebang_interp(s, strlen(s), out, sizeof(out)), -1);
	s = "#!/a/very/long/interpreter/path\n";
	assert_int_equal(fl_shebang_interp(s, strlen(s), out, 8), -1);
}

static void resolve_searches_path_like_execvp(void **state)
{
	char dir[] = "/tmp/fl-unit-XXXXXX", p[512], out[512], path[1200];
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/a", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/b", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	/* a/prog is not executable and b/prog is: execvp runs b/prog */
	snprintf(p, sizeof(p), "%s/a/prog", dir);
	fd = open(p, O_CREAT | O_WRONLY, 0644);
	close(fd);
	snprintf(p, sizeof(p), "%s/b/prog", dir);
	fd = open(p, O_CREAT | O_WRONLY, 0755);
	close(fd);
	snprintf(path, sizeof(path), "/nonexistent::%s/a:%s/b", dir, dir);
	assert_int_equal(fl_exe_resolve("prog", path, out, sizeof(out)), 0);
	assert_string_equal(out, p);
	assert_int_equal(fl_exe_resolve("noprog", path, out, sizeof(out)), -1);
	/* a name with a slash is not searched */
	assert_int_equal(fl_exe_resolve(p, "/nonexistent", out, sizeof(out)), 0);
	assert_string_equal(out, p);
	assert_int_equal(fl_exe_resolve("b/prog", "/nonexistent", out, sizeof(out)), -1);
	/* a directory is not a program */
	snprintf(path, sizeof(path), "%s", dir);
	assert_int_equal(fl_exe_resolve("a", path, out, sizeof(out)), -1);
	/* PATH unset: execvp's default /bin:/usr/bin */
	assert_int_equal(fl_exe_resolve("sh", NULL, out, sizeof(out)), 0);
	assert_string_equal(out, "/bin/sh");
	assert_int_equal(fl_exe_resolve("", NULL, out, sizeof(out)), -1);
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	assert_int_equal(system(p), 0);
}

static void describe_gives_the_one_line(void **state)
{
	struct fl_exe_diag d;
	char out[9000];

	(void)state;
	memset(&d, 0, sizeof(d));
	snprintf(d.exe, sizeof(d.exe), "/usr/bin/foo");
	d.verdict = FL_EXE_STATIC;
	fl_exe_describe(&d, out, sizeof(out));
	assert_string_equal(out, "/usr/bin/foo is statically linked: LD_PRELOAD cannot apply, so it runs unaccelerated");
	snprintf(d.script, sizeof(d.script), "./s.sh");
	d.verdict = FL_EXE_SETUID;
	d.id = 65534;
	fl_exe_describe(&d, out, sizeof(out));
	assert_string_equal(out, "/usr/bin/foo (the interpreter of ./s.sh) is setuid to uid 65534: "
				 "glibc ignores LD_PRELOAD in secure mode, so it runs unaccelerated");
	assert_null(strchr(out, '\n'));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(elf_without_interp_is_static),
		cmocka_unit_test(elf_with_interp_is_dynamic),
		cmocka_unit_test(go_build_id_note_is_go),
		cmocka_unit_test(non_programs_get_no_opinion),
		cmocka_unit_test(secure_mode_follows_the_kernel),
		cmocka_unit_test(shebang_names_the_interpreter),
		cmocka_unit_test(resolve_searches_path_like_execvp),
		cmocka_unit_test(describe_gives_the_one_line),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
