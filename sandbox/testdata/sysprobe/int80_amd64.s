#include "textflag.h"

// func int80(nr, a0, a1, a2, a3, a4, a5 uint32) int32
//
// An i386 system call from this x86_64 process: eax the number, ebx ecx
// edx esi edi ebp the arguments (MOVL zero-extends, so the kernel and
// seccomp see 32-bit values). BP, the frame pointer, is kept in R12, which
// int 0x80 preserves.
TEXT ·int80(SB), NOSPLIT, $0-36
	MOVL	nr+0(FP), AX
	MOVL	a0+4(FP), BX
	MOVL	a1+8(FP), CX
	MOVL	a2+12(FP), DX
	MOVL	a3+16(FP), SI
	MOVL	a4+20(FP), DI
	MOVQ	BP, R12
	MOVL	a5+24(FP), BP
	INT	$0x80
	MOVQ	R12, BP
	MOVL	AX, ret+32(FP)
	RET
