// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* exe_elf.c - reads an executable's program headers, notes and section names
 * to tell whether LD_PRELOAD can reach its socket calls. libelf (already
 * linked by the CLI) handles 32/64-bit and either byte order. */
#include <gelf.h>
#include <libelf.h>
#include <string.h>

#include "exe_elf.h"

/* The Go linker's build-id note (.note.go.buildid): name "Go\0\0" with
 * n_namesz 4 (ELF_NOTE_GO_NAME), type 4 (ELF_NOTE_GOBUILDID_TAG), both in
 * cmd/link/internal/ld/elf.go. It is in a PT_NOTE segment, so it survives
 * a binary whose section headers were stripped. A namesz of 3 ("Go\0", the
 * usual ELF convention) is accepted too. */
#define FL_GO_NOTE_BUILDID 4

static int fl_note_is_go(const GElf_Nhdr *nh, const char *name)
{
	return nh->n_type == FL_GO_NOTE_BUILDID &&
	       (nh->n_namesz == 3 || nh->n_namesz == 4) &&
	       !memcmp(name, "Go", 3) && (nh->n_namesz == 3 || !name[3]);
}

static int fl_notes_have_go(Elf_Data *d)
{
	GElf_Nhdr nh;
	size_t off = 0, next, name_off, desc_off;

	while (d && off < d->d_size &&
	       (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
		if (fl_note_is_go(&nh, (const char *)d->d_buf + name_off))
			return 1;
		off = next;
	}
	return 0;
}

/* Go's markers in the section table: .go.buildinfo (every Go >= 1.13
 * binary, module info and version) or the .note.go.buildid note. */
static int fl_sections_say_go(Elf *e)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(e, &shstrndx))
		return 0;
	while ((scn = elf_nextscn(e, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			return 0;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".go.buildinfo") || !strcmp(name, ".note.go.buildid")))
			return 1;
	}
	return 0;
}

static enum fl_elf_kind fl_elf_classify(Elf *e)
{
	GElf_Ehdr eh;
	GElf_Phdr ph;
	size_t phnum, i;
	int interp = 0, go = 0;

	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
		return FL_ELF_NOT_ELF;
	/* Relocatable objects and core files are not programs. ET_DYN covers
	 * PIE executables and static-pie (ET_DYN without PT_INTERP). */
	if ((eh.e_type != ET_EXEC && eh.e_type != ET_DYN) || elf_getphdrnum(e, &phnum))
		return FL_ELF_NOT_ELF;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(e, (int)i, &ph))
			return FL_ELF_NOT_ELF;
		if (ph.p_type == PT_INTERP)
			interp = 1;
		else if (ph.p_type == PT_NOTE && !go)
			go = fl_notes_have_go(elf_getdata_rawchunk(e, (int64_t)ph.p_offset,
								   ph.p_filesz, ELF_T_NHDR));
	}
	/* Go first: a Go binary is usually static too, and "Go" says why a
	 * rebuild with cgo would not help either. */
	if (go || fl_sections_say_go(e))
		return FL_ELF_GO;
	return interp ? FL_ELF_DYNAMIC : FL_ELF_STATIC;
}

enum fl_elf_kind fl_elf_inspect(int fd)
{
	enum fl_elf_kind k;
	Elf *e;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return FL_ELF_NOT_ELF;
	/* ELF_C_READ (not MMAP): works on any readable fd, e.g. a pipe-backed
	 * or FUSE file that cannot be mapped. */
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e)
		return FL_ELF_NOT_ELF;
	k = fl_elf_classify(e);
	elf_end(e);
	return k;
}
