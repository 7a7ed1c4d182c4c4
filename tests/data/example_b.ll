; SPEC §1.10 Example B: `int f(int x){ return x > 0 ? x : -x; }` as clang -O0 emits it, in LLVM 22 syntax.
; ModuleID = '-'
source_filename = "-"
target datalayout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-f80:128-n8:16:32:64-S128"
target triple = "x86_64-unknown-linux-gnu"

define dso_local i32 @f(i32 %0) {
  %2 = alloca i32, align 4
  store i32 %0, ptr %2, align 4
  %3 = load i32, ptr %2, align 4
  %4 = icmp sgt i32 %3, 0
  br i1 %4, label %5, label %7

5:
  %6 = load i32, ptr %2, align 4
  br label %10

7:
  %8 = load i32, ptr %2, align 4
  %9 = sub nsw i32 0, %8
  br label %10

10:
  %11 = phi i32 [ %6, %5 ], [ %9, %7 ]
  ret i32 %11
}
