/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* exe_elf.h - what an ELF executable's contents say about LD_PRELOAD. */
#ifndef FL_EXE_ELF_H
#define FL_EXE_ELF_H

enum fl_elf_kind {
	FL_ELF_NOT_ELF,	/* unreadable, not ELF, or not an executable: no opinion */
	FL_ELF_DYNAMIC,	/* has an interpreter (ld.so), so LD_PRELOAD applies */
	FL_ELF_STATIC,	/* no PT_INTERP (static or static-pie): no ld.so to preload */
	FL_ELF_GO,	/* built by Go: its net package makes system calls itself */
};

/* Classifies the file open on fd (read from offset 0, fd left open). */
enum fl_elf_kind fl_elf_inspect(int fd);

#endif
