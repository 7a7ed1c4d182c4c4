; SPEC §1.10 Example C in LLVM 22 IR: globals, declarations, two returns, direct/indirect/library calls,
; a switch, a phi and an unreachable block. (The constant GEP has a non-zero index so that LLVM 22 keeps it.)
source_filename = "example_c.c"
target triple = "x86_64-unknown-linux-gnu"

@g = global i32 5, align 4
@fp = global ptr @callee, align 8
@.str = private unnamed_addr constant [7 x i8] c"x = %d\00", align 1

declare i32 @printf(ptr, ...)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

define i32 @callee(i32 %x) {
entry:
  %c = icmp sgt i32 %x, 0
  br i1 %c, label %pos, label %neg
pos:
  ret i32 1
neg:
  ret i32 2
}

define i32 @main(i32 %argc) {
entry:
  %buf = alloca i8, align 1
  call void @llvm.memset.p0.i64(ptr %buf, i8 0, i64 1, i1 false)
  %r = call i32 @callee(i32 %argc)
  %p = call i32 (ptr, ...) @printf(ptr getelementptr inbounds ([7 x i8], ptr @.str, i64 0, i64 1), i32 %r)
  %f = load ptr, ptr @fp, align 8
  %i = call i32 %f(i32 %r)
  %v = load i32, ptr @g, align 4
  switch i32 %v, label %def [
    i32 1, label %one
    i32 2, label %two
  ]
one:
  %a = add i32 %i, 1
  br label %join
two:
  br label %join
def:
  br label %join
join:
  %m = phi i32 [ %a, %one ], [ 1, %two ], [ 0, %def ]
  ret i32 %m
dead:
  ret i32 7
}
