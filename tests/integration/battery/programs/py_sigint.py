"""py_sigint.py: a loop that saves a checkpoint on Ctrl-C (KeyboardInterrupt), and code that
saves and restores the SIGINT and SIGTERM handlers."""
import os
import signal


def main():
    print("handler:", signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGINT, old)  # TypeError when old is None
    step = 0
    try:
        while True:
            step += 1
            with open("progress.txt", "w") as f:
                f.write("step %d\n" % step)
            if step == 50:
                os.kill(os.getpid(), signal.SIGINT)
    except KeyboardInterrupt:
        with open("checkpoint.txt", "w") as f:
            f.write("saved at step %d\n" % step)
        print("KeyboardInterrupt at step", step)
    finally:
        print("finally ran")


if __name__ == "__main__":
    main()
