!> Every constant of the module has the value of the C header
!> (include/pg_strategy.h, read through pgf_test_c.c), and the module's list
!> covers the header's.
program test_fortran_constants
  use, intrinsic :: iso_c_binding, only: c_char, c_null_char, c_int, c_long_long
  use pgstrategy
  use pgf_test
  implicit none

  interface
    function c_constant(name, value) bind(C, name="pgf_test_c_constant")
      import :: c_char, c_int, c_long_long
      character(kind=c_char), dimension(*), intent(in) :: name
      integer(c_long_long), intent(out) :: value
      integer(c_int) :: c_constant
    end function c_constant
    function c_constant_count() bind(C, name="pgf_test_c_constant_count")
      import :: c_int
      integer(c_int) :: c_constant_count
    end function c_constant_count
  end interface

  integer :: compared = 0

  call test_start("fortran_constants")
  call test_step("constants")
  call same("PG_VERSION_MAJOR", PG_VERSION_MAJOR)
  call same("PG_VERSION_MINOR", PG_VERSION_MINOR)
  call same("PG_VERSION_PATCH", PG_VERSION_PATCH)
  call same("PG_OK", PG_OK)
  call same("PG_ERR_INVALID_ARGUMENT", PG_ERR_INVALID_ARGUMENT)
  call same("PG_ERR_UNKNOWN_BACKEND", PG_ERR_UNKNOWN_BACKEND)
  call same("PG_ERR_UNSUPPORTED", PG_ERR_UNSUPPORTED)
  call same("PG_ERR_UNAVAILABLE", PG_ERR_UNAVAILABLE)
  call same("PG_ERR_BACKEND", PG_ERR_BACKEND)
  call same("PG_ERR_TIMEOUT", PG_ERR_TIMEOUT)
  call same("PG_ERR_MISMATCH", PG_ERR_MISMATCH)
  call same("PG_ERR_PLUGIN", PG_ERR_PLUGIN)
  call same("PG_ERR_STATE", PG_ERR_STATE)
  call same("PG_ERR_NO_MEMORY", PG_ERR_NO_MEMORY)
  call same("PG_ERR_INTERNAL", PG_ERR_INTERNAL)
  call same("PG_ERR_ABORTED", PG_ERR_ABORTED)
  call same("PG_INT8", PG_INT8)
  call same("PG_UINT8", PG_UINT8)
  call same("PG_INT32", PG_INT32)
  call same("PG_UINT32", PG_UINT32)
  call same("PG_INT64", PG_INT64)
  call same("PG_UINT64", PG_UINT64)
  call same("PG_FLOAT16", PG_FLOAT16)
  call same("PG_BFLOAT16", PG_BFLOAT16)
  call same("PG_FLOAT32", PG_FLOAT32)
  call same("PG_FLOAT64", PG_FLOAT64)
  call same("PG_SUM", PG_SUM)
  call same("PG_PROD", PG_PROD)
  call same("PG_MIN", PG_MIN)
  call same("PG_MAX", PG_MAX)
  call same("PG_AVG", PG_AVG)
  call same("PG_BAND", PG_BAND)
  call same("PG_BOR", PG_BOR)
  call same("PG_BXOR", PG_BXOR)
  call expect(compared == c_constant_count(), "every constant of the C table was compared")

  call test_step("status names")
  call expect(pg_status_name(PG_ERR_STATE) == "PG_ERR_STATE", "status name of PG_ERR_STATE")
  call expect(pg_status_name(1000) == "PG_STATUS_UNKNOWN", "status name outside the enum")
  call test_finish("fortran_constants")

contains

  subroutine same(name, fortran_value)
    character(len=*), intent(in) :: name
    integer, intent(in) :: fortran_value
    integer(c_long_long) :: c_value
    compared = compared + 1
    if (.not. check(c_constant(name//c_null_char, c_value) == 1, name//" is not in the C table")) return
    call expect(c_value == fortran_value, name//" differs between Fortran and C")
  end subroutine same

end program test_fortran_constants
