! fortran_trace.f90: a Fortran program that uses every procedure of the dftrace module; check_fortran_trace.py checks its trace.
!
! Usage: fortran_trace <output file> [on|off]. "off" initialises with enable=.false. and runs
! the same calls, which must then all be harmless no-ops. Self-checks that need no trace
! (names, status strings, hashes) stop the program with a non-zero code when they fail.
program fortran_trace
  use dftrace
  use, intrinsic :: iso_fortran_env, only: int64, output_unit
  implicit none
  character(len=4096) :: out
  character(len=8) :: mode
  character(len=16) :: padded_key
  integer :: st, item
  integer(dftrace_region_kind) :: train, fwd_r, r
  type(dftrace_node) :: fwd, jacobi, collate
  type(dftrace_iter) :: batches
  logical :: on, ready

  call get_command_argument(1, out)
  mode = 'on'
  if (command_argument_count() >= 2) call get_command_argument(2, mode)
  on = mode == 'on'

  call dftrace_init(enable=on, output_file=out, exec_name='fortran_trace', status=st)
  if (on .and. st /= dftrace_ok) call fail('init: '//dftrace_status_string(st))
  if (.not. on .and. st /= dftrace_err_disabled) call fail('init off: '//dftrace_status_string(st))
  if (dftrace_is_enabled() .neqv. on) call fail('dftrace_is_enabled')

  ! The tree by path and by handle; names as docs/ai-tree.md section 1 and 2 give them.
  fwd = dftrace_node('compute.forward')
  call expect(dftrace_node_name(fwd), 'forward')
  call expect(dftrace_node_category(fwd), 'compute')
  call expect(dftrace_node_path(fwd), 'compute.forward')
  jacobi = dftrace_node('solver.jacobi')        ! a new category and child
  call expect(dftrace_node_name(jacobi), 'jacobi')
  call expect(dftrace_node_category(jacobi), 'solver')
  collate = dftrace_node_derive('data.preprocess', 'collate')
  call expect(dftrace_node_name(collate), 'preprocess.collate')
  call expect(dftrace_node_category(collate), 'data')
  call expect(dftrace_node_path(dftrace_node('ai.compute.forward')), 'compute.forward')
  call expect(dftrace_node_name(dftrace_node('ai')), 'ai_root')
  call expect(dftrace_node_path(dftrace_node('solver.'//repeat('x', 150))), 'solver.'//repeat('x', 150))
  call expect(dftrace_status_string(dftrace_err_io), 'I/O error')
  if (len(dftrace_version()) < 5) call fail('version')
  if (on) then
    if (dftrace_hash_define(dftrace_hash_string, 'vm') /= 7386335834152862147_int64) call fail('hash of vm')
  end if

  ! Arguments on subtrees, each type once: the root reaches every node, 'compute' only its own.
  call dftrace_update('ai', 'epoch', 2_int64)
  call dftrace_update('', 'lr', 0.5d0)
  call dftrace_update('compute', 'phase', 'train')
  call dftrace_update(fwd, 'warm', .true.)

  ! Nesting: train > forward > jacobi, per-use arguments of every type on forward.
  train = dftrace_region_begin('pipeline.train')
  fwd_r = dftrace_region_begin('compute.forward')
  call dftrace_region_arg(fwd_r, 'layer', 3)
  call dftrace_region_arg(fwd_r, 'flops', 1234567890123_int64)
  call dftrace_region_arg(fwd_r, 'scale', 0.25d0)
  call dftrace_region_arg(fwd_r, 'half', 1.5)
  call dftrace_region_arg(fwd_r, 'name', 'conv "1" \ end')
  call dftrace_region_arg(fwd_r, 'bias', .false.)
  padded_key = 'padded'
  call dftrace_region_arg(fwd_r, padded_key, 'x  ')
  call dftrace_region_arg(fwd_r, repeat('k', 200), repeat('v', 300))  ! longer than the stack buffers
  r = dftrace_region_begin(jacobi)
  call dftrace_region_end(r)
  call dftrace_region_end(fwd_r)

  ! An event carries its node's arguments as they are when it ends.
  call dftrace_update('ai', 'step', 7)
  r = dftrace_region_begin('compute.backward')
  call dftrace_update('ai', 'step', 8)
  call dftrace_region_end(r)
  call dftrace_update_remove('ai', 'lr')
  r = dftrace_region_begin(collate)
  call dftrace_region_end(r)

  ! Enable and disable: subtree switch, per-use override, cancel.
  call dftrace_disable('compute')
  if (dftrace_node_is_enabled(fwd)) call fail('compute.forward still enabled')
  r = dftrace_region_begin(fwd)
  if (r /= 0) call fail('region on a disabled node')
  call dftrace_region_end(r)
  r = dftrace_region_begin(fwd, enable=.true.)  ! forced on: written
  call dftrace_region_end(r)
  call dftrace_enable('compute')
  if (dftrace_node_is_enabled('compute.step') .neqv. on) call fail('compute.step enabled state')
  r = dftrace_region_begin('compute.step', enable=.false.)  ! forced off: nothing
  if (r /= 0) call fail('forced-off region')
  call dftrace_region_end(r)
  r = dftrace_region_begin('compute.step')
  call dftrace_region_cancel(r)

  ! Counters, an instant, metadata, streaming marks.
  call dftrace_counter('compute', 'residual', 0.125d0)
  call dftrace_counter(jacobi, 'iters', 42)
  call dftrace_counter('solver', 'bytes', 4096_int64)
  call dftrace_instant('checkpoint.capture')
  call dftrace_metadata('solver', 'jacobi')
  call dftrace_process_property('mesh', '64x64')
  call dftrace_process_property('ranks_per_node', 4)
  call dftrace_mark_start('pipeline.epoch')
  call dftrace_mark_end('pipeline.epoch')

  ! An iter loop: per item one fetch.iter and one fetch.block event (count 1, 2); what the
  ! body does nests under the block.
  call dftrace_iter_begin(batches, 'dataloader.fetch')
  do item = 1, 2
    call dftrace_iter_fetch(batches)
    call dftrace_iter_body(batches)
    r = dftrace_region_begin('data.item')
    call dftrace_region_arg(r, 'item', item)
    call dftrace_region_end(r)
  end do
  call dftrace_iter_end(batches)

  ! Bad input: one "dftrace:" line each on stderr, nothing written, the program goes on.
  r = dftrace_region_begin('bad..path')
  if (r /= 0) call fail('region on a bad path')
  call dftrace_update('ai', 'complex', (1.0, 2.0))

  ! The process-wide switch.
  call dftrace_set_enabled(.false.)
  r = dftrace_region_begin('compute.forward')
  if (r /= 0) call fail('region while switched off')
  call dftrace_set_enabled(on)

  call dftrace_region_end(train)
  call dftrace_flush(status=st)
  if (on .and. st /= dftrace_ok) call fail('flush: '//dftrace_status_string(st))
  ! Without a schedule a step only counts: no window closes.
  call dftrace_step(ready=ready, status=st)
  if (ready .or. (on .and. st /= dftrace_ok)) call fail('step without a schedule')
  if (on) then
    call expect(dftrace_output_path(), trim(out))
  else
    call expect(dftrace_output_path(), '')
  end if
  if (dftrace_events_dropped() /= 0) call fail('events dropped')
  ! The checker compares this with the trace's own count.
  write (output_unit, '(a,i0)') 'events_written=', dftrace_events_written()
  call dftrace_finalize(status=st)
  if (st /= dftrace_ok .and. on) call fail('finalize: '//dftrace_status_string(st))
  call dftrace_finalize()  ! again: harmless

contains

  subroutine fail(what)
    character(*), intent(in) :: what
    write (*, '(2a)') 'FAIL: ', what
    error stop 1
  end subroutine fail

  subroutine expect(got, want)
    character(*), intent(in) :: got, want
    if (got /= want .or. len(got) /= len(want)) call fail("got '"//got//"', want '"//want//"'")
  end subroutine expect

end program fortran_trace
