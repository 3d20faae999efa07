// SPDX-License-Identifier: GPL-2.0
/*
 * A stand-in for NVIDIA's nvidia_fs.ko, for the nfs-gds VM tests only. It reproduces just the
 * parts nfs-gds looks at, with the real driver's names and formats:
 *
 *  - the module is named nvidia_fs with version 2.28.4 (/sys/module/nvidia_fs/version);
 *  - a misc character device nvidia-fs0 (/dev/nvidia-fs0 via devtmpfs);
 *  - /proc/driver/nvidia-fs/{version,devcount,modules};
 *  - like the real driver, it binds to rpcrdma only when the device is opened: __symbol_get() of
 *    rpcrdma_register_nvfs_dma_ops / rpcrdma_unregister_nvfs_dma_ops, then register. While a
 *    handle is open and registration worked, "modules" lists "rpcrdma: (null)" (the real
 *    driver's entry has a NULL version); it always lists the placeholder "wekafsio: 1". The
 *    last close unregisters and drops the symbol references. On a kernel that refuses
 *    symbol_get of non-GPL exports this fails exactly as it does for the real driver.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/proc_fs.h>
#include <linux/seq_file.h>

#define REG_SYM "rpcrdma_register_nvfs_dma_ops"
#define DREG_SYM "rpcrdma_unregister_nvfs_dma_ops"

static DEFINE_MUTEX(stub_lock);
static unsigned int open_count;
static bool rpcrdma_found;
static void (*rpcrdma_dreg)(void);
static char stub_ops[64]; /* opaque stand-in for struct nvfs_dma_rw_ops; never dereferenced */
static struct proc_dir_entry *proc_dir;

static void probe_rpcrdma(void)
{
	int (*reg)(void *ops);
	void (*dreg)(void);
	int err;

	if (rpcrdma_found)
		return;
	reg = __symbol_get(REG_SYM);
	if (!reg)
		return; /* the real driver is silent here too */
	dreg = __symbol_get(DREG_SYM);
	if (!dreg) {
		__symbol_put(REG_SYM);
		pr_err("nvidia_fs (stub): deregister function not found %s\n", DREG_SYM);
		return;
	}
	err = reg(stub_ops);
	__symbol_put(REG_SYM);
	if (err) {
		__symbol_put(DREG_SYM);
		pr_err("nvidia_fs (stub): nvfs registration failed for module sym :%s, error :%d\n",
		       REG_SYM, err);
		return;
	}
	rpcrdma_dreg = dreg; /* keeps the reference on rpcrdma until the last close */
	rpcrdma_found = true;
}

static void cleanup_rpcrdma(void)
{
	if (!rpcrdma_found)
		return;
	rpcrdma_dreg();
	rpcrdma_dreg = NULL;
	__symbol_put(DREG_SYM);
	rpcrdma_found = false;
}

static int stub_open(struct inode *inode, struct file *file)
{
	mutex_lock(&stub_lock);
	open_count++;
	probe_rpcrdma();
	mutex_unlock(&stub_lock);
	return 0;
}

static int stub_release(struct inode *inode, struct file *file)
{
	mutex_lock(&stub_lock);
	if (--open_count == 0)
		cleanup_rpcrdma();
	mutex_unlock(&stub_lock);
	return 0;
}

static const struct file_operations stub_fops = {
	.owner = THIS_MODULE,
	.open = stub_open,
	.release = stub_release,
	.llseek = noop_llseek,
};

static struct miscdevice stub_dev = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "nvidia-fs0",
	.fops = &stub_fops,
	.mode = 0666,
};

static int version_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%s: %u.%u\n", "version", 2, 28);
	return 0;
}

static int devcount_show(struct seq_file *m, void *v)
{
	seq_printf(m, "%u\n", 1);
	return 0;
}

static int modules_show(struct seq_file *m, void *v)
{
	mutex_lock(&stub_lock);
	seq_printf(m, "%s: %s\n", "wekafsio", "1");
	if (rpcrdma_found)
		seq_printf(m, "%s: %s\n", "rpcrdma", "(null)");
	mutex_unlock(&stub_lock);
	return 0;
}

static int __init stub_init(void)
{
	int err;

	proc_dir = proc_mkdir("driver/nvidia-fs", NULL);
	if (!proc_dir)
		return -ENOMEM;
	if (!proc_create_single("version", 0444, proc_dir, version_show) ||
	    !proc_create_single("devcount", 0444, proc_dir, devcount_show) ||
	    !proc_create_single("modules", 0444, proc_dir, modules_show)) {
		proc_remove(proc_dir);
		return -ENOMEM;
	}
	err = misc_register(&stub_dev);
	if (err) {
		proc_remove(proc_dir);
		return err;
	}
	pr_info("nvidia_fs (stub for nfs-gds tests) loaded\n");
	return 0;
}

static void __exit stub_exit(void)
{
	misc_deregister(&stub_dev);
	proc_remove(proc_dir);
	mutex_lock(&stub_lock);
	cleanup_rpcrdma();
	mutex_unlock(&stub_lock);
}

module_init(stub_init);
module_exit(stub_exit);
MODULE_LICENSE("GPL");
MODULE_VERSION("2.28.4");
MODULE_DESCRIPTION("nvidia_fs stand-in for nfs-gds VM tests (not NVIDIA's driver)");
