; SPEC §1.10 Example A: the unit-test IR of ProGraML's from_llvm_ir test, in LLVM 22 syntax (ptr for i32*).
source_filename = "foo.c"
define i32 @A(i32, i32) #0 {
  %3 = alloca i32, align 4
  %4 = alloca i32, align 4
  store i32 %0, ptr %3, align 4
  store i32 %1, ptr %4, align 4
  %5 = load i32, ptr %3, align 4
  %6 = load i32, ptr %4, align 4
  %7 = add nsw i32 %5, %6
  ret i32 %7
}
