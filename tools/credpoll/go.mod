module cotal.dev/credpoll

go 1.22
