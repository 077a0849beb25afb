#define _GNU_SOURCE
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
typedef struct { _Atomic long go, done[2]; void *addr[2]; pid_t pid[2]; } sh_t;
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc,char**argv){
  size_t n=strtoul(argv[1],0,0); int iters=atoi(argv[2]); double frac=atof(argv[3]); /* share the root writes */
  sh_t*s=mmap(0,4096,PROT_READ|PROT_WRITE,MAP_SHARED|MAP_ANONYMOUS,-1,0);
  for(int me=0;me<2;me++){ if(me==0 && fork()!=0) continue; if(me==1) break;
    /* child = rank 0 */ goto run0; }
  int me=1; goto run;
run0: me=0;
run:;
  cpu_set_t c;CPU_ZERO(&c);CPU_SET(me,&c);sched_setaffinity(0,sizeof c,&c);
  char*buf=aligned_alloc(4096,n); memset(buf,me?0:7,n); char*own=aligned_alloc(4096,n); memset(own,1,n); int oop=argc>4;
  s->addr[me]=buf; s->pid[me]=getpid(); atomic_fetch_add(&s->go,1); while(atomic_load(&s->go)<2);
  size_t w=((size_t)(n*frac))&~4095UL; double t0=0;
  for(int it=0;it<iters+10;it++){
    if(it==10) t0=now();
    if(me==0){ if(w){struct iovec l={buf,w},r={s->addr[1],w}; if(process_vm_writev(s->pid[1],&l,1,&r,1,0)!=(ssize_t)w){perror("w");exit(1);}} if(oop) memcpy(own,buf,n); }
    else { if(n-w){struct iovec l={buf+w,n-w},r={(char*)s->addr[0]+w,n-w}; if(process_vm_readv(s->pid[0],&l,1,&r,1,0)!=(ssize_t)(n-w)){perror("r");exit(1);}} }
    atomic_store(&s->done[me],it+1); while(atomic_load(&s->done[!me])<it+1);
  }
  double t=(now()-t0)/iters*1e6;
  if(me==1){ for(size_t i=0;i<n;i++) if(buf[i]!=7){printf("wrong at %zu\n",i);break;} printf("%zu frac %.2f: %.2f us\n",n,frac,t); wait(0);}
  return 0;}
